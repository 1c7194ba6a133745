/** The chat history API's shapes (quota_service/serving/chats.py). */

export type Role = 'system' | 'user' | 'assistant';

export interface IMessage {
  seq: number;
  role: Role;
  content: string;
  created_at: string | null;
}

export interface IChat {
  id: string;
  owner: string;
  title: string;
  endpoint: string | null;
  endpoint_name: string;
  endpoint_gone: boolean;
  model: string;
  messages_count: number;
  created_at: string | null;
  updated_at: string | null;
  /** GET chats/{id} only */
  messages?: IMessage[];
}

/** One model of the gateway's v1/models, with the endpoint it names. */
export interface IModelChoice {
  id: string;
  endpoint: string | null;
}

/** What GET hubgrid/api/endpoints says that the Chat page needs. */
export interface IEndpointRef {
  id: string;
  name: string;
  domain: string;
  project: string;
}
