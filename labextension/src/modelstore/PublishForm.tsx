/**
 * The admins' Publish form: a model folder (one of the admin's own or
 * their project's preselected, never another user's), an inference image,
 * where (superadmins: every domain or any one domain; a domain admin: their
 * domain), an optional name
 * and one replica's CPU and memory (left empty: the definition's
 * `metadata.min_resource`). The service reads the card from the folder's
 * model-definition.yaml; each refusal is shown at its field.
 */

import * as React from 'react';

import { StoreApi } from './api';
import { Notes } from './DeployForm';
import { IPublishForm, publishBody } from './model';
import { useSending } from './sending';
import { IStoreModel } from './types';

export interface IPublishChoices {
  /** whose: "yours", "project ml", "bob's" (model.publishFolders) */
  folders: Array<{ id: string; name: string; whose?: string }>;
  /** the folder chosen at first: one of the caller's own or their project's, '' for none */
  preselected: string;
  images: string[];
  /** '' : every domain */
  scopes: string[];
}

interface IProps {
  api: StoreApi;
  choices: IPublishChoices;
  onPublished: (m: IStoreModel) => void;
  onCancel: () => void;
}

export function PublishForm(props: IProps): JSX.Element {
  const { choices } = props;
  const [form, setForm] = React.useState<IPublishForm>({
    folder: choices.preselected,
    image: choices.images[0] ?? '',
    domain: choices.scopes[0] ?? '',
    name: '',
    cpu: '',
    mem: ''
  });
  const { problems, error, busy, send } = useSending();
  const set = (field: keyof IPublishForm) => (e: React.ChangeEvent<HTMLInputElement | HTMLSelectElement>) =>
    setForm({ ...form, [field]: e.target.value });

  const publish = (): Promise<void> =>
    send(publishBody(form), async body => props.onPublished(await props.api.publish(body)));

  return (
    <form className="jp-hubgrid-store-publish" onSubmit={e => { e.preventDefault(); void publish(); }}>
      <h3>Publish a model folder</h3>
      <label>
        Model folder
        <select className="jp-mod-styled" name="folder" value={form.folder} onChange={set('folder')}>
          {!form.folder && <option value="">pick a model folder</option>}
          {choices.folders.map(f => <option key={f.id} value={f.id}>{f.whose ? `${f.name} (${f.whose})` : f.name}</option>)}
        </select>
      </label>
      <label>
        Image
        <select className="jp-mod-styled" name="image" value={form.image} onChange={set('image')}>
          {choices.images.map(i => <option key={i} value={i}>{i}</option>)}
        </select>
      </label>
      <label>
        Published to
        <select className="jp-mod-styled" name="domain" value={form.domain} onChange={set('domain')}>
          {choices.scopes.map(d => <option key={d} value={d}>{d ? `domain ${d}` : 'every domain'}</option>)}
        </select>
      </label>
      <label>
        Name
        <input className="jp-mod-styled" name="name" placeholder="the folder's name" value={form.name} onChange={set('name')} />
      </label>
      <label>
        CPU per replica
        <input className="jp-mod-styled" name="cpu" placeholder="from min_resource" value={form.cpu} onChange={set('cpu')} />
      </label>
      <label>
        Memory per replica
        <input className="jp-mod-styled" name="mem" placeholder="from min_resource" value={form.mem} onChange={set('mem')} />
      </label>
      <Notes items={problems} kind="problem" />
      {error && <div className="jp-hubgrid-store-error" role="alert">{error}</div>}
      <div className="jp-hubgrid-store-buttons">
        <button type="submit" className="jp-mod-styled jp-mod-accept" disabled={busy}>Publish</button>
        <button type="button" className="jp-mod-styled jp-mod-reject" onClick={props.onCancel}>Cancel</button>
      </div>
    </form>
  );
}
