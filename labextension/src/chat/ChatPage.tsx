/**
 * The "Chat" page (a main-area widget): pick a model the gateway offers
 * (v1/models through `hubgrid/gateway/`), type, and the answer streams in
 * piece by piece. Conversations are kept on the server (`hubgrid/api/chats`):
 * listed, started, renamed, deleted, and read again in any browser. Every
 * message and name is rendered as text.
 */

import { MainAreaWidget } from '@jupyterlab/apputils';
import { ServerConnection } from '@jupyterlab/services';
import { ReactWidget } from '@jupyterlab/ui-components';
import * as React from 'react';

import { ChatApi } from './api';
import { chatIcon } from './icons';
import { chatNote, modelChoices, modelFor, titleFrom } from './model';
import { IChat, IModelChoice, Role } from './types';

interface IShown {
  role: Role;
  content: string;
  streaming?: boolean;
}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

export function ChatPage({ api }: { api: ChatApi }): JSX.Element {
  const [chats, setChats] = React.useState<IChat[]>([]);
  const [current, setCurrent] = React.useState<IChat | null>(null);
  const [models, setModels] = React.useState<IModelChoice[]>([]);
  const [model, setModel] = React.useState('');
  const [shown, setShown] = React.useState<IShown[]>([]);
  const [input, setInput] = React.useState('');
  const [busy, setBusy] = React.useState(false);
  const [error, setError] = React.useState('');
  const [renaming, setRenaming] = React.useState<{ id: string; title: string } | null>(null);
  const [deleting, setDeleting] = React.useState('');
  const stop = React.useRef<AbortController | null>(null);

  const loadList = React.useCallback(async () => {
    setChats(await api.chats());
  }, [api]);

  const loadModels = React.useCallback(async () => {
    const [answer, endpoints] = await Promise.all([api.models(), api.endpoints()]);
    setModels(modelChoices(answer, endpoints));
  }, [api]);

  React.useEffect(() => {
    Promise.all([loadList(), loadModels()]).catch(e => setError(errorText(e)));
    return () => stop.current?.abort();
  }, [loadList, loadModels]);

  React.useEffect(() => {
    setModel(m => (m && models.some(x => x.id === m) ? m : modelFor(current, models)));
  }, [models, current]);

  const open = async (id: string): Promise<void> => {
    setError('');
    try {
      const chat = await api.chat(id);
      setCurrent(chat);
      setShown((chat.messages ?? []).map(m => ({ role: m.role, content: m.content })));
      setModel(modelFor(chat, models));
    } catch (e) {
      setError(errorText(e));
    }
  };

  const startNew = (): void => {
    setCurrent(null);
    setShown([]);
    setError('');
  };

  const send = async (): Promise<void> => {
    const text = input.trim();
    if (!text || !model || busy) {
      return;
    }
    setBusy(true);
    setError('');
    const endpoint = models.find(m => m.id === model)?.endpoint ?? null;
    const before = shown.filter(m => !m.streaming);
    const asked: IShown[] = [...before, { role: 'user', content: text }];
    setShown([...asked, { role: 'assistant', content: '', streaming: true }]);
    setInput('');
    try {
      let chat = current;
      if (!chat) {
        chat = await api.create({ title: titleFrom(text), endpoint, model, messages: [{ role: 'user', content: text }] });
      } else {
        if (chat.model !== model) {
          chat = await api.update(chat.id, endpoint ? { model, endpoint } : { model });
        }
        await api.append(chat.id, [{ role: 'user', content: text }]);
      }
      setCurrent(chat);
      stop.current = new AbortController();
      let answer = '';
      answer = await api.stream(model, asked, piece => {
        answer += piece;
        const partial = answer;
        setShown([...asked, { role: 'assistant', content: partial, streaming: true }]);
      }, stop.current.signal);
      setShown([...asked, { role: 'assistant', content: answer }]);
      await api.append(chat.id, [{ role: 'assistant', content: answer }]);
      await loadList();
    } catch (e) {
      setShown(asked);
      setError(errorText(e));
      await loadList().catch(() => undefined);
    } finally {
      stop.current = null;
      setBusy(false);
    }
  };

  const rename = async (): Promise<void> => {
    if (!renaming) {
      return;
    }
    try {
      const chat = await api.update(renaming.id, { title: renaming.title });
      if (current?.id === chat.id) {
        setCurrent({ ...current, title: chat.title });
      }
      setRenaming(null);
      await loadList();
    } catch (e) {
      setError(errorText(e));
    }
  };

  const remove = async (id: string): Promise<void> => {
    try {
      await api.remove(id);
      setDeleting('');
      if (current?.id === id) {
        startNew();
      }
      await loadList();
    } catch (e) {
      setError(errorText(e));
    }
  };

  return (
    <div className="jp-hubgrid-chat">
      <div className="jp-hubgrid-chat-side">
        <button className="jp-mod-styled jp-mod-accept" onClick={startNew} disabled={busy}>
          New chat
        </button>
        <ul className="jp-hubgrid-chat-list" aria-label="Conversations">
          {chats.map(c => (
            <li key={c.id} className={'jp-hubgrid-chat-item' + (current?.id === c.id ? ' jp-mod-selected' : '')} data-id={c.id}>
              {renaming?.id === c.id ? (
                <form onSubmit={e => { e.preventDefault(); void rename(); }}>
                  <input aria-label="Title" value={renaming.title} maxLength={200}
                    onChange={e => setRenaming({ id: c.id, title: e.target.value })} />
                  <button type="submit" className="jp-mod-styled">Save</button>
                  <button type="button" className="jp-mod-styled" onClick={() => setRenaming(null)}>Cancel</button>
                </form>
              ) : (
                <>
                  <button className="jp-hubgrid-chat-title" onClick={() => void open(c.id)} disabled={busy}>
                    {c.title}
                  </button>
                  <div className="jp-hubgrid-chat-note">{chatNote(c)}</div>
                  <button className="jp-mod-styled" onClick={() => setRenaming({ id: c.id, title: c.title })}>Rename</button>
                  {deleting === c.id ? (
                    <button className="jp-mod-styled jp-mod-warn" onClick={() => void remove(c.id)}>Confirm delete</button>
                  ) : (
                    <button className="jp-mod-styled" onClick={() => setDeleting(c.id)} disabled={busy}>Delete</button>
                  )}
                </>
              )}
            </li>
          ))}
        </ul>
      </div>
      <div className="jp-hubgrid-chat-main">
        <div className="jp-hubgrid-chat-bar">
          <label>
            Model{' '}
            <select aria-label="Model" className="jp-hubgrid-chat-model" value={model} disabled={busy}
              onChange={e => setModel(e.target.value)}>
              {models.length === 0 && <option value="">no model you may use</option>}
              {models.map(m => (
                <option key={m.id} value={m.id}>{m.id}</option>
              ))}
            </select>
          </label>
          <button className="jp-mod-styled" onClick={() => void loadModels().catch(e => setError(errorText(e)))}>
            Reload models
          </button>
          {current && <span className="jp-hubgrid-chat-heading">{current.title}</span>}
          {current?.endpoint_gone && (
            <span className="jp-hubgrid-chat-gone">its endpoint {current.endpoint_name} was deleted</span>
          )}
        </div>
        <div className="jp-hubgrid-chat-messages" aria-live="polite">
          {shown.map((m, i) => (
            <div key={i} className="jp-hubgrid-chat-message" data-role={m.role} data-streaming={m.streaming ? 'true' : 'false'}>
              <div className="jp-hubgrid-chat-role">{m.role}</div>
              <div className="jp-hubgrid-chat-content">{m.content}</div>
            </div>
          ))}
        </div>
        {error && <div className="jp-hubgrid-chat-error" role="alert">{error}</div>}
        <form className="jp-hubgrid-chat-input" onSubmit={e => { e.preventDefault(); void send(); }}>
          <textarea aria-label="Message" value={input} placeholder="Type a message" disabled={busy}
            onChange={e => setInput(e.target.value)}
            onKeyDown={e => {
              if (e.key === 'Enter' && !e.shiftKey) {
                e.preventDefault();
                void send();
              }
            }} />
          {busy ? (
            <button type="button" className="jp-mod-styled" onClick={() => stop.current?.abort()}>Stop</button>
          ) : (
            <button type="submit" className="jp-mod-styled jp-mod-accept" disabled={!model || !input.trim()}>Send</button>
          )}
        </form>
      </div>
    </div>
  );
}

export function chatWidget(settings: ServerConnection.ISettings): MainAreaWidget<ReactWidget> {
  const api = new ChatApi(settings);
  const content = ReactWidget.create(<ChatPage api={api} />);
  content.addClass('jp-hubgrid-chat-page');
  const widget = new MainAreaWidget({ content });
  widget.id = 'jp-hubgrid-chat';
  widget.title.label = 'Chat';
  widget.title.icon = chatIcon;
  widget.title.closable = true;
  return widget;
}
