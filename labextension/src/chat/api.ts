/**
 * The Chat page's calls, through this server's extension (which adds the
 * server's credential): the conversations under `hubgrid/api/chats`, the
 * endpoints the user sees (`hubgrid/api/endpoints`), and the gateway under
 * `hubgrid/gateway/` (its `v1/models` and a streamed `v1/chat/completions`,
 * read chunk by chunk). Every refusal is a ChatError with the message given.
 */

import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import { completionBody } from './model';
import { deltaOf, SseReader } from './sse';
import { IChat, IEndpointRef, IMessage, Role } from './types';

const API = 'hubgrid/api/';
const GATEWAY = 'hubgrid/gateway/';
const enc = encodeURIComponent;

export class ChatError extends Error {
  constructor(message: string, readonly status: number) {
    super(message);
  }
}

function messageOf(data: any, status: number): string {
  return data?.error?.message || data?.message || `the call failed (${status})`;
}

export class ChatApi {
  constructor(readonly settings: ServerConnection.ISettings) {}

  chats(): Promise<IChat[]> {
    return this.call(API + 'chats');
  }

  chat(id: string): Promise<IChat> {
    return this.call(API + `chats/${enc(id)}`);
  }

  create(body: { title: string; endpoint: string | null; model: string; messages: { role: Role; content: string }[] }): Promise<IChat> {
    const { endpoint, ...rest } = body;
    return this.call(API + 'chats', 'POST', endpoint ? body : rest);
  }

  update(id: string, body: { title?: string; endpoint?: string; model?: string }): Promise<IChat> {
    return this.call(API + `chats/${enc(id)}`, 'PATCH', body);
  }

  remove(id: string): Promise<void> {
    return this.call(API + `chats/${enc(id)}`, 'DELETE');
  }

  append(id: string, messages: { role: Role; content: string }[]): Promise<IMessage[]> {
    return this.call(API + `chats/${enc(id)}/messages`, 'POST', { messages });
  }

  endpoints(): Promise<IEndpointRef[]> {
    return this.call(API + 'endpoints');
  }

  models(): Promise<any> {
    return this.call(GATEWAY + 'v1/models');
  }

  /**
   * A streamed answer of `model` to `messages`: `onText` gets each piece as
   * it arrives; resolves with the whole answer. `signal` stops it.
   */
  async stream(
    model: string,
    messages: Pick<IMessage, 'role' | 'content'>[],
    onText: (text: string) => void,
    signal?: AbortSignal
  ): Promise<string> {
    const response = await this.request(GATEWAY + 'v1/chat/completions', {
      method: 'POST',
      body: JSON.stringify(completionBody(model, messages)),
      headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream' },
      signal
    });
    if (!response.ok || !response.body) {
      throw await this.refusal(response);
    }
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    const sse = new SseReader();
    let answer = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) {
        break;
      }
      for (const payload of sse.feed(decoder.decode(value, { stream: true }))) {
        const delta = deltaOf(payload);
        if (delta.error) {
          throw new ChatError(delta.error, 502);
        }
        if (delta.text) {
          answer += delta.text;
          onText(delta.text);
        }
        if (delta.done) {
          return answer;
        }
      }
    }
    return answer;
  }

  private async request(path: string, init: RequestInit): Promise<Response> {
    try {
      return await ServerConnection.makeRequest(URLExt.join(this.settings.baseUrl, path), init, this.settings);
    } catch (error) {
      throw new ChatError(`cannot reach this Jupyter server: ${String(error)}`, 0);
    }
  }

  private async refusal(response: Response): Promise<ChatError> {
    const text = await response.text();
    let data: any = text;
    try {
      data = JSON.parse(text);
    } catch {
      // not JSON: the text says it
    }
    return new ChatError(typeof data === 'string' && data ? data.slice(0, 300) : messageOf(data, response.status), response.status);
  }

  private async call<T>(path: string, method = 'GET', body?: unknown): Promise<T> {
    const init: RequestInit = { method };
    if (body !== undefined) {
      init.body = JSON.stringify(body);
      init.headers = { 'Content-Type': 'application/json' };
    }
    const response = await this.request(path, init);
    if (!response.ok) {
      throw await this.refusal(response);
    }
    return response.status === 204 ? (undefined as T) : response.json();
  }
}
