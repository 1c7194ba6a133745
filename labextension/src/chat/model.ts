/**
 * The Chat page's rules: pure, tested with plain data
 * (src/__tests__/chat.spec.ts).
 */

import { IChat, IEndpointRef, IMessage, IModelChoice } from './types';

/** The most a title keeps (the service's bound is 200). */
export const TITLE_MAX = 60;

/** A new conversation's title: its first message, on one line, shortened. */
export function titleFrom(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  if (!line) {
    return 'New chat';
  }
  return line.length > TITLE_MAX ? line.slice(0, TITLE_MAX - 1) + '…' : line;
}

/** The endpoint a gateway model id names: `name`, `project/name` or `domain/project/name`. */
export function endpointOf(modelId: string, endpoints: IEndpointRef[]): string | null {
  const parts = modelId.split('/');
  const found = endpoints.filter(e =>
    parts.length === 1 ? e.name === parts[0]
      : parts.length === 2 ? e.project === parts[0] && e.name === parts[1]
        : e.domain === parts[0] && e.project === parts[1] && e.name === parts[2]
  );
  return found.length === 1 ? found[0].id : null;
}

/** The models of the gateway's `v1/models` answer, each with its endpoint. */
export function modelChoices(answer: any, endpoints: IEndpointRef[]): IModelChoice[] {
  const data = Array.isArray(answer?.data) ? answer.data : [];
  return data
    .filter((m: any) => typeof m?.id === 'string')
    .map((m: any) => ({ id: m.id as string, endpoint: endpointOf(m.id, endpoints) }));
}

/** The model a conversation talks to now: its own while offered, else the first offered. */
export function modelFor(chat: IChat | null, models: IModelChoice[]): string {
  if (chat && models.some(m => m.id === chat.model)) {
    return chat.model;
  }
  return models.length ? models[0].id : '';
}

/** The body of a streamed chat completion over a conversation's messages. */
export function completionBody(model: string, messages: Pick<IMessage, 'role' | 'content'>[]): object {
  return { model, stream: true, messages: messages.map(m => ({ role: m.role, content: m.content })) };
}

/** What the list says of a conversation beside its title. */
export function chatNote(chat: IChat): string {
  const where = chat.endpoint_gone ? `${chat.endpoint_name} (deleted)` : chat.model || 'no model';
  const n = chat.messages_count;
  return `${where} · ${n} message${n === 1 ? '' : 's'}`;
}
