/**
 * Images (hubgrid:admin-images): the registry (GET images: name, tag,
 * minimum resources, apps, allowed domains); superadmins edit an entry
 * (PATCH images/{name}: only what changed) and rescan the Docker engines
 * (POST images/scan) with the result shown line by line.
 */

import { Button } from '@jupyterlab/ui-components';
import * as React from 'react';

import { AdminFrame, ErrorBar, IAdminPageProps, useAdminLoad } from '../frame';
import { OpsApi } from './api';
import { imageChange, imageForm, IImageForm, nameAndTag, portsToText, scanLines } from './images';
import { slotsText } from './queue';
import { IImage } from './types';

function ImageRow(props: { image: IImage; editable: boolean; onSave: (name: string, change: object) => Promise<void> }) {
  const { image } = props;
  const [form, setForm] = React.useState<IImageForm | null>(null);
  const [error, setError] = React.useState<unknown>(null);
  const { name, tag } = nameAndTag(image.name);
  const save = async () => {
    if (!form) {
      return;
    }
    try {
      await props.onSave(image.name, imageChange(image, form));
      setForm(null);
      setError(null);
    } catch (e) {
      setError(e);
    }
  };
  const field = (key: keyof IImageForm, label: string) =>
    form && (
      <label className="jp-hubgrid-ops-filter">
        {label}{' '}
        <input className="jp-mod-styled" name={key} value={form[key]}
          onChange={e => setForm({ ...form, [key]: e.target.value })} />
      </label>
    );
  return (
    <>
      <tr data-image={image.name}>
        <td>{name}</td>
        <td>{tag}</td>
        <td>{slotsText(image.min_slots) || 'none'}</td>
        <td>{portsToText(image.service_ports) || 'none'}</td>
        <td>{image.domains.length ? image.domains.join(', ') : 'every domain'}</td>
        <td>{image.source ?? ''}</td>
        <td>
          {props.editable && !form && (
            <Button small minimal onClick={() => setForm(imageForm(image))}>Edit</Button>
          )}
        </td>
      </tr>
      {(form || error) && (
        <tr className="jp-hubgrid-ops-image-edit" data-image-edit={image.name}>
          <td colSpan={7}>
            {field('minSlots', 'minimum (slot=amount, …)')}
            {field('ports', 'apps (name:protocol:path, …)')}
            {field('domains', 'domains (empty: every domain)')}
            {form && (
              <>
                <Button small onClick={() => void save()}>Save</Button>
                <Button small minimal onClick={() => { setForm(null); setError(null); }}>Cancel</Button>
              </>
            )}
            {error ? <ErrorBar error={error} /> : null}
          </td>
        </tr>
      )}
    </>
  );
}

export function ImagesPage(props: IAdminPageProps): JSX.Element {
  const api = React.useMemo(() => new OpsApi(props.settings), [props.settings]);
  const superadmin = props.caller.role === 'superadmin';
  const { data, error, busy, reload } = useAdminLoad(() => api.images(), [api]);
  const [scan, setScan] = React.useState<string[] | null>(null);
  const [scanError, setScanError] = React.useState<unknown>(null);
  const [scanning, setScanning] = React.useState(false);
  const rescan = async () => {
    setScanning(true);
    try {
      setScan(scanLines(await api.scan()));
      setScanError(null);
      await reload();
    } catch (e) {
      setScanError(e);
    } finally {
      setScanning(false);
    }
  };
  const save = async (name: string, change: object) => {
    await api.patchImage(name, change);
    await reload();
  };
  return (
    <AdminFrame page="images" title="Images" onRefresh={() => void reload()} busy={busy} error={error}
      toolbar={superadmin && (
        <Button small onClick={() => void rescan()} disabled={scanning}>
          {scanning ? 'Scanning…' : 'Rescan engines'}
        </Button>
      )}>
      {scanError ? <ErrorBar error={scanError} /> : null}
      {scan && (
        <ul className="jp-hubgrid-ops-scan" aria-label="scan result">
          {scan.map((line, i) => (
            <li key={i}>{line}</li>
          ))}
        </ul>
      )}
      <table className="jp-hubgrid-ops-table jp-hubgrid-ops-images">
        <thead>
          <tr>
            <th>Name</th>
            <th>Tag</th>
            <th>Minimum resources</th>
            <th>Apps</th>
            <th>Allowed domains</th>
            <th>Source</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {(data ?? []).map(img => (
            <ImageRow key={img.name} image={img} editable={superadmin} onSave={save} />
          ))}
          {data && data.length === 0 && (
            <tr>
              <td colSpan={7}>no images in the registry</td>
            </tr>
          )}
        </tbody>
      </table>
    </AdminFrame>
  );
}
