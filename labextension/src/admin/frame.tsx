/**
 * The admin pages' shared frame (also for the ops helper's pages under
 * src/admin/ops/: import { AdminFrame, FieldError, useAdminLoad, adminPage }
 * from '../frame'). A page is a thin React component in a MainAreaWidget:
 *
 * - AdminFrame: the title, a toolbar with "Refresh" (and the page's own
 *   buttons), the error bar (never hidden: the service's message as text),
 *   then the page's body;
 * - FieldError: a 422 problem shown next to its field;
 * - useAdminLoad: load data on mount and on refresh, with busy/error, and
 *   quietly (`refresh`: no busy, for a page's own polling: ./live.ts);
 * - adminPage: the MainAreaWidget of a page (one instance per page id).
 */

import { MainAreaWidget } from '@jupyterlab/apputils';
import { ServerConnection } from '@jupyterlab/services';
import { LabIcon, ReactWidget, refreshIcon, ToolbarButtonComponent } from '@jupyterlab/ui-components';
import * as React from 'react';

import { hubgridIcon } from '../icons';
import { describeError } from './errors';
import { adminTabTitle } from './pages';
import { IAdminCaller } from './role';

/** What every admin page is given. */
export interface IAdminPageProps {
  settings: ServerConnection.ISettings;
  caller: IAdminCaller;
}

export interface IFrameProps {
  /** The page's id suffix: the frame's data-page attribute. */
  page: string;
  title: string;
  onRefresh?: () => void;
  busy?: boolean;
  /** An error (AdminError, Error or text): shown until the next success. */
  error?: unknown;
  /** The page's own toolbar items, after Refresh. */
  toolbar?: React.ReactNode;
  /** The frame's element (a live page polls only while it is shown: ./live.ts). */
  frameRef?: React.Ref<HTMLDivElement>;
  children?: React.ReactNode;
}

/** Title, toolbar (Refresh first) and error bar around a page's body. */
export function AdminFrame(props: IFrameProps): JSX.Element {
  return (
    <div className="jp-hubgrid-admin" data-page={props.page} ref={props.frameRef}>
      <div className="jp-hubgrid-admin-header">
        <h2 className="jp-hubgrid-admin-title">{props.title}</h2>
        <div className="jp-hubgrid-admin-toolbar">
          {props.onRefresh && (
            <ToolbarButtonComponent
              icon={refreshIcon}
              label="Refresh"
              tooltip="Read again"
              onClick={props.onRefresh}
              enabled={!props.busy}
            />
          )}
          {props.toolbar}
        </div>
        {props.busy && <span className="jp-hubgrid-admin-busy">reading…</span>}
      </div>
      {props.error ? <ErrorBar error={props.error} /> : null}
      <div className="jp-hubgrid-admin-body">{props.children}</div>
    </div>
  );
}

/** An error as a line of text (role=alert). */
export function ErrorBar(props: { error: unknown }): JSX.Element {
  return (
    <div className="jp-hubgrid-admin-error" role="alert">
      {describeError(props.error)}
    </div>
  );
}

/** A field's problem (from fieldErrors), right after the field. */
export function FieldError(props: { field: string; errors: { [field: string]: string } }): JSX.Element | null {
  const text = props.errors[props.field];
  return text ? (
    <span className="jp-hubgrid-admin-field-error" data-field={props.field} role="alert">
      {text}
    </span>
  ) : null;
}

/**
 * A small labelled form row: the label names its input (its accessible
 * name is the label alone); the hint and the service's problem follow it.
 */
export function Field(props: {
  label: string;
  field: string;
  errors?: { [field: string]: string };
  hint?: string;
  children: React.ReactNode;
}): JSX.Element {
  return (
    <div className="jp-hubgrid-admin-field" data-field={props.field}>
      <label className="jp-hubgrid-admin-field-input">
        <span className="jp-hubgrid-admin-label">{props.label}</span>
        {props.children}
      </label>
      {props.hint && <span className="jp-hubgrid-admin-hint">{props.hint}</span>}
      {props.errors && <FieldError field={props.field} errors={props.errors} />}
    </div>
  );
}

/**
 * `load` run on mount and by `reload`; the last answer, busy and error.
 * `refresh` loads quietly (no busy) and rejects when the load fails, so a
 * poll backs off; a failed load keeps the last answer. The newest call wins.
 */
export function useAdminLoad<T>(load: () => Promise<T>, deps: React.DependencyList = []) {
  const [data, setData] = React.useState<T | null>(null);
  const [error, setError] = React.useState<unknown>(null);
  const [busy, setBusy] = React.useState(false);
  const seq = React.useRef(0);
  const run = React.useCallback(async (quiet: boolean) => {
    const mine = ++seq.current;
    if (!quiet) {
      setBusy(true);
    }
    try {
      const value = await load();
      if (mine === seq.current) {
        setData(value);
        setError(null);
      }
    } catch (e) {
      if (mine === seq.current) {
        setError(e);
      }
      if (quiet) {
        throw e;
      }
    } finally {
      if (mine === seq.current) {
        setBusy(false);
      }
    }
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, deps);
  const reload = React.useCallback(() => run(false), [run]);
  const refresh = React.useCallback(() => run(true), [run]);
  React.useEffect(() => {
    void reload();
  }, [reload]);
  return { data, error, busy, reload, refresh, setError };
}

/** The ReactWidget of a page component. */
class PageView extends ReactWidget {
  constructor(private readonly make: () => JSX.Element) {
    super();
    this.addClass('jp-hubgrid-admin-page');
  }
  render(): JSX.Element {
    return this.make();
  }
}

/**
 * The MainAreaWidget of an admin page: id `jp-hubgrid-admin-<page>`, the
 * label and icon in its tab, the component rendered in it.
 */
export function adminPage(
  page: string,
  label: string,
  icon: LabIcon | undefined,
  make: () => JSX.Element
): MainAreaWidget<ReactWidget> {
  const widget = new MainAreaWidget<ReactWidget>({ content: new PageView(make) });
  widget.id = `jp-hubgrid-admin-${page}`;
  const title = adminTabTitle(label);
  widget.title.label = title.label;
  widget.title.caption = title.caption;
  widget.title.closable = true;
  widget.title.icon = icon ?? hubgridIcon;
  return widget;
}
