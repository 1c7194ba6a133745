/**
 * The "Model Store" page (a main-area widget): the cards of the models an
 * admin published (title, description, task, labels, license, one
 * replica's resources), a search, a card's detail with its Deploy form,
 * and for admins Publish and Unpublish. A deploy says which endpoint it
 * made and, when the Serving page is there, opens it. Every text is
 * rendered as text.
 */

import { MainAreaWidget, showDialog, Dialog } from '@jupyterlab/apputils';
import { ServerConnection } from '@jupyterlab/services';
import { ReactWidget } from '@jupyterlab/ui-components';
import { CommandRegistry } from '@lumino/commands';
import * as React from 'react';

import { StoreApi } from './api';
import { DeployForm, IDeployChoices, Notes } from './DeployForm';
import { modelStoreIcon } from './icons';
import { publishFolders, publishScopes, scopeText, search, slotsText, titleOf } from './model';
import { IPublishChoices, PublishForm } from './PublishForm';
import { IEndpointMade, IProblem, IStoreModel } from './types';

/** The Serving page's command, when that page is installed. */
export const SHOW_SERVING = 'hubgrid:show-serving';

interface IMadeNote {
  endpoint: IEndpointMade;
  warnings: IProblem[];
}

function Card(props: { model: IStoreModel; selected: boolean; onSelect: () => void }): JSX.Element {
  const { model } = props;
  const c = model.card;
  return (
    <div className={`jp-hubgrid-store-card${props.selected ? ' jp-mod-selected' : ''}`} data-model={model.name}
      role="button" tabIndex={0} onClick={props.onSelect} onKeyDown={e => e.key === 'Enter' && props.onSelect()}>
      <div className="jp-hubgrid-store-title">{titleOf(model)}</div>
      {c.task && <div className="jp-hubgrid-store-task">{c.task}</div>}
      {c.description && <div className="jp-hubgrid-store-description">{c.description}</div>}
      <div className="jp-hubgrid-store-labels">
        {c.label.map(l => <span key={l} className="jp-hubgrid-store-label">{l}</span>)}
      </div>
      <div className="jp-hubgrid-store-meta">
        {c.license && <span>{c.license}</span>}
        <span className="jp-hubgrid-store-resources">{slotsText(model.slots)}</span>
      </div>
      {!model.folder.available && <div className="jp-hubgrid-store-error">its folder is gone</div>}
    </div>
  );
}

function Detail(props: { model: IStoreModel }): JSX.Element {
  const { model } = props;
  const c = model.card;
  const rows: Array<[string, string | null]> = [
    ['Model', c.model],
    ['Author', c.author],
    ['Version', c.version],
    ['Task', c.task],
    ['Category', c.category],
    ['Framework', c.framework.join(', ') || null],
    ['License', c.license],
    ['Image', model.image],
    ['One replica', slotsText(model.slots)],
    ['Published to', scopeText(model)],
    ['Published by', `${model.published_by}, ${model.published_at.slice(0, 10)}`]
  ];
  return (
    <div className="jp-hubgrid-store-detail-card">
      <h3>{titleOf(model)}</h3>
      {c.description && <p>{c.description}</p>}
      <table className="jp-hubgrid-store-facts">
        <tbody>
          {rows.filter(([, v]) => v).map(([k, v]) => <tr key={k}><th>{k}</th><td>{v}</td></tr>)}
        </tbody>
      </table>
    </div>
  );
}

/** The page's content: reads `GET me` and the store once, again on demand. */
export class ModelStoreView extends ReactWidget {
  constructor(settings: ServerConnection.ISettings, commands: CommandRegistry | null = null) {
    super();
    this.api = new StoreApi(settings);
    this.commands = commands;
    this.addClass('jp-hubgrid-store');
    void this.refresh();
  }

  /** Read the store (and the form's choices) again. */
  async refresh(): Promise<void> {
    try {
      const [me, models, groups] = await Promise.all([
        this.api.hubgrid.me(), this.api.list(), this.api.hubgrid.groups()
      ]);
      this.role = me.role;
      this.models = models;
      this.deployChoices = {
        projects: me.projects.filter(p => (p as { active?: boolean }).active !== false).map(p => p.name),
        groups: groups.filter(g => g.active !== false && (g.session_types ?? []).includes('inference')).map(g => g.name)
      };
      this.error = '';
    } catch (e) {
      this.error = `Cannot read the Model Store: ${(e as Error).message}`;
    }
    this.update();
  }

  private get isAdmin(): boolean {
    return this.role === 'superadmin' || this.role === 'domain-admin';
  }

  private async startPublish(): Promise<void> {
    try {
      const [images, folders, me, domains] = await Promise.all([
        this.api.hubgrid.images(), this.api.hubgrid.folders(), this.api.hubgrid.me(),
        this.role === 'superadmin' ? this.api.domains() : Promise.resolve([])
      ]);
      const shown = publishFolders(folders, me);
      this.publishChoices = {
        folders: shown.folders,
        preselected: shown.preselected,
        images: images.filter(i => (i.session_types ?? []).includes('inference')).map(i => i.name),
        scopes: publishScopes(me.role, me.domain, domains)
      };
      this.error = '';
    } catch (e) {
      this.error = `Cannot read what can be published: ${(e as Error).message}`;
    }
    this.update();
  }

  private async unpublish(m: IStoreModel): Promise<void> {
    const answer = await showDialog({
      title: 'Unpublish',
      body: `Unpublish ${titleOf(m)}? Its folder stays as it is; endpoints deployed from it must be deleted first.`,
      buttons: [Dialog.cancelButton(), Dialog.warnButton({ label: 'Unpublish' })]
    });
    if (!answer.button.accept) {
      return;
    }
    try {
      await this.api.unpublish(m.id);
      this.selected = null;
      this.error = '';
    } catch (e) {
      this.error = `Not unpublished: ${(e as Error).message}`;
    }
    await this.refresh();
  }

  private select(id: string): void {
    this.selected = id;
    this.made = null;
    this.update();
  }

  protected render(): JSX.Element {
    const shown = search(this.models, this.query);
    const current = this.models.find(m => m.id === this.selected) ?? null;
    const canServe = this.commands?.hasCommand(SHOW_SERVING) ?? false;
    return (
      <div className="jp-hubgrid-store-page">
        <div className="jp-hubgrid-store-header">
          <h2>Model Store</h2>
          <input className="jp-mod-styled jp-hubgrid-store-search" type="search" placeholder="Search models"
            aria-label="Search models" value={this.query}
            onChange={e => { this.query = e.target.value; this.update(); }} />
          <button className="jp-mod-styled" onClick={() => void this.refresh()}>Refresh</button>
          {this.isAdmin && (
            <button className="jp-mod-styled jp-mod-accept" onClick={() => void this.startPublish()}>Publish…</button>
          )}
        </div>
        {this.error && <div className="jp-hubgrid-store-error" role="alert">{this.error}</div>}
        {this.publishChoices && (
          <PublishForm api={this.api} choices={this.publishChoices}
            onPublished={m => { this.publishChoices = null; this.selected = m.id; void this.refresh(); }}
            onCancel={() => { this.publishChoices = null; this.update(); }} />
        )}
        <div className="jp-hubgrid-store-body">
          <div className="jp-hubgrid-store-cards">
            {shown.length === 0 && (
              <div className="jp-hubgrid-store-empty">
                {this.models.length ? 'No model matches the search.' : 'No model is published yet.'}
              </div>
            )}
            {shown.map(m => (
              <Card key={m.id} model={m} selected={m.id === this.selected} onSelect={() => this.select(m.id)} />
            ))}
          </div>
          {current && (
            <div className="jp-hubgrid-store-detail" key={current.id}>
              <Detail model={current} />
              {this.made ? (
                <div className="jp-hubgrid-store-made" role="status">
                  <p>
                    Endpoint <b>{this.made.endpoint.name}</b> made in project {this.made.endpoint.project}
                    {' '}({this.made.endpoint.state}): its replicas start now, with {titleOf(current)} read-only at /models.
                  </p>
                  <p data-field="call-as">
                    Call it through the gateway as model <code>{this.made.endpoint.name}</code> (the openai
                    client&apos;s <code>model=</code>), with a token of it or your own hub token.
                  </p>
                  <Notes items={this.made.warnings} kind="warning" />
                  {canServe ? (
                    <button className="jp-mod-styled" onClick={() => void this.commands?.execute(SHOW_SERVING)}>
                      Open the Serving page
                    </button>
                  ) : (
                    <p>Its state, replicas and tokens are on the Serving page (GET endpoints/{this.made.endpoint.id}).</p>
                  )}
                  <button className="jp-mod-styled" onClick={() => { this.made = null; this.update(); }}>Deploy again</button>
                </div>
              ) : this.deployChoices && (
                <DeployForm api={this.api} model={current} choices={this.deployChoices}
                  onDeployed={(endpoint, warnings) => { this.made = { endpoint, warnings }; this.update(); }} />
              )}
              {current.can_manage && (
                <button className="jp-mod-styled jp-mod-warn jp-hubgrid-store-unpublish"
                  onClick={() => void this.unpublish(current)}>
                  Unpublish
                </button>
              )}
            </div>
          )}
        </div>
      </div>
    );
  }

  private readonly api: StoreApi;
  private readonly commands: CommandRegistry | null;
  private models: IStoreModel[] = [];
  private role = '';
  private query = '';
  private selected: string | null = null;
  private made: IMadeNote | null = null;
  private error = '';
  private deployChoices: IDeployChoices | null = null;
  private publishChoices: IPublishChoices | null = null;
}

/** The page as a main-area widget. */
export function modelStoreWidget(
  settings: ServerConnection.ISettings,
  commands: CommandRegistry | null = null
): MainAreaWidget<ModelStoreView> {
  const content = new ModelStoreView(settings, commands);
  const widget = new MainAreaWidget({ content });
  widget.id = 'jp-hubgrid-model-store';
  widget.title.label = 'Model Store';
  widget.title.icon = modelStoreIcon;
  widget.title.closable = true;
  return widget;
}
