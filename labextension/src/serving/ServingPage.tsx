/**
 * The "Serving" page (a main-area widget): the endpoints the user sees
 * (state with its reason, health, replicas, gateway URL, model name),
 * read again every few seconds with @lumino/polling while the page shows;
 * one endpoint's detail (EndpointDetail); the create form (CreateForm).
 * Every name is rendered as text.
 */

import { MainAreaWidget } from '@jupyterlab/apputils';
import { PageConfig } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';
import { ReactWidget, refreshIcon, ToolbarButtonComponent } from '@jupyterlab/ui-components';
import type { Message } from '@lumino/messaging';
import { Poll } from '@lumino/polling';
import * as React from 'react';

import { IMeModel } from '../summary/types';
import { ServingApi } from './api';
import { IGatewayInfo } from './callsnippet';
import { CreateForm, IChoices } from './CreateForm';
import { EndpointDetail } from './EndpointDetail';
import { servingIcon } from './icons';
import { gatewayUrls, healthText, inferenceGroups, inferenceImages, modelFolders, modelName, replicasText, stateText } from './model';
import { IEndpoint, IToken } from './types';

/** How often the list (and the endpoint shown) is read again. */
const INTERVAL = 5000;

export class ServingView extends ReactWidget {
  constructor(
    settings: ServerConnection.ISettings,
    private readonly openLog: (api: ServingApi, allocation: string) => Promise<void>
  ) {
    super();
    this.api = new ServingApi(settings);
    this.addClass('jp-hubgrid-serving');
    this.poll = new Poll({
      name: 'hubgrid:serving',
      factory: () => this.load(),
      frequency: { interval: INTERVAL, backoff: true, max: 60000 },
      standby: () => document.hidden || !this.isVisible || this.creating
    });
  }

  /** Read again now. */
  refresh(): void {
    void this.poll.refresh();
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    this.refresh();
  }

  dispose(): void {
    this.poll.dispose();
    super.dispose();
  }

  private async load(): Promise<void> {
    try {
      if (!this.me) {
        [this.me, this.gateway] = await Promise.all([this.api.hubgrid.me(), this.api.gatewayInfo()]);
      }
      this.endpoints = await this.api.list();
      const id = this.selected;
      if (id) {
        const [detail, tokens] = await Promise.all([this.api.get(id), this.api.tokens(id)]);
        if (this.selected === id) {
          this.detail = detail;
          this.tokens = tokens;
        }
      }
      this.error = '';
    } catch (e) {
      this.error = (e as Error).message;
      if (this.selected && (e as { status?: number }).status === 404) {
        this.selected = null; // it is gone
        this.detail = null;
      }
    } finally {
      this.loaded = true;
      this.update();
    }
  }

  private select(id: string | null): void {
    this.selected = id;
    this.detail = null;
    this.tokens = [];
    this.update();
    void this.poll.refresh();
  }

  private async startCreate(): Promise<void> {
    try {
      const [me, groups, images, folders] = await Promise.all([
        this.me ? Promise.resolve(this.me) : this.api.hubgrid.me(),
        this.api.hubgrid.groups(),
        this.api.hubgrid.images(),
        this.api.hubgrid.folders()
      ]);
      this.me = me;
      this.choices = {
        projects: me.projects.filter(p => p.active !== false).map(p => p.name),
        groups: inferenceGroups(groups),
        images: inferenceImages(images),
        folders: modelFolders(folders)
      };
      this.creating = true;
      this.error = '';
    } catch (e) {
      this.error = `Cannot read what an endpoint can be made of: ${(e as Error).message}`;
    }
    this.update();
  }

  protected render(): JSX.Element {
    const origin = window.location.origin;
    const hubPrefix = PageConfig.getOption('hubPrefix') || '/hub/';
    return (
      <div className="jp-hubgrid-serving-page">
        <div className="jp-hubgrid-serving-header">
          <h2>Serving</h2>
          <ToolbarButtonComponent icon={refreshIcon} tooltip="Read again" onClick={() => this.refresh()} />
          <button className="jp-mod-styled jp-mod-accept" title="Make an endpoint of a model folder"
            onClick={() => void this.startCreate()}>
            New endpoint
          </button>
        </div>
        {this.error && <p className="jp-hubgrid-error" role="alert">{this.error}</p>}
        {this.creating && this.choices && (
          <CreateForm api={this.api} choices={this.choices}
            onCancel={() => { this.creating = false; this.update(); }}
            onCreated={e => { this.creating = false; this.select(e.id); }} />
        )}
        {!this.loaded && <p>Loading…</p>}
        {this.loaded && !this.endpoints.length && <p className="jp-hubgrid-note">No endpoint you can see.</p>}
        {this.endpoints.length > 0 && (
          <table className="jp-hubgrid-serving-list">
            <thead>
              <tr><th>Name</th><th>Project</th><th>Group</th><th>State</th><th>Health</th><th>Replicas</th><th>Model</th><th>URL</th></tr>
            </thead>
            <tbody>
              {this.endpoints.map(e => (
                <tr key={e.id} data-endpoint={e.name} data-project={e.project}
                  className={e.id === this.selected ? 'jp-mod-selected' : ''}>
                  <td><a href="#" onClick={ev => { ev.preventDefault(); this.select(e.id); }}>{e.name}</a></td>
                  <td>{e.project}</td>
                  <td>{e.resource_group}</td>
                  <td data-field="state">{stateText(e)}</td>
                  <td data-field="health">{healthText(e.health)}</td>
                  <td data-field="replicas">{replicasText(e)}</td>
                  <td data-field="model">{modelName(e, this.endpoints)}</td>
                  <td data-field="url"><code>{gatewayUrls(origin, hubPrefix, e.id).endpoint}</code></td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        {this.detail && this.me && (
          <EndpointDetail key={this.detail.id} api={this.api} endpoint={this.detail} tokens={this.tokens}
            model={modelName(this.detail, this.endpoints)} me={this.me} origin={origin} hubPrefix={hubPrefix}
            gateway={this.gateway}
            onChanged={() => this.refresh()}
            onDeleted={() => this.select(null)}
            onLog={allocation => {
              this.openLog(this.api, allocation).catch(e => {
                this.error = `Cannot open the replica's log: ${(e as Error).message}`;
                this.update();
              });
            }} />
        )}
      </div>
    );
  }

  private readonly api: ServingApi;
  private readonly poll: Poll;
  private me: IMeModel | null = null;
  /** where this Lab's notebooks reach the gateway (the server says) */
  private gateway: IGatewayInfo | null = null;
  private endpoints: IEndpoint[] = [];
  private selected: string | null = null;
  private detail: IEndpoint | null = null;
  private tokens: IToken[] = [];
  private choices: IChoices | null = null;
  private creating = false;
  private loaded = false;
  private error = '';
}

/** The page as a main-area widget; `openLog` shows a replica's session log. */
export function servingWidget(
  settings: ServerConnection.ISettings,
  openLog: (api: ServingApi, allocation: string) => Promise<void>
): MainAreaWidget<ServingView> {
  const content = new ServingView(settings, openLog);
  const widget = new MainAreaWidget({ content });
  widget.id = 'jp-hubgrid-serving';
  widget.title.label = 'Serving';
  widget.title.icon = servingIcon;
  widget.title.closable = true;
  return widget;
}
