/** The Model Store's data as the service describes it (`GET model-store`). */

import type { IProblem } from '../problems';

export type { IProblem };

/** A card: the definition's metadata (every text shown as text). */
export interface ICard {
  model: string;
  title: string | null;
  author: string | null;
  version: string | null;
  description: string | null;
  task: string | null;
  category: string | null;
  license: string | null;
  architecture?: string | null;
  created?: string | null;
  last_modified?: string | null;
  label: string[];
  framework: string[];
  min_resource: { [slot: string]: string } | null;
}

export interface IStoreModel {
  id: string;
  name: string;
  /** null: published to every domain */
  domain: string | null;
  folder: { id: string; name: string | null; available: boolean };
  image: string;
  /** one replica's slots, exact decimal strings (mem in bytes) */
  slots: { [slot: string]: string };
  card: ICard;
  published_by: string;
  published_at: string;
  updated_at: string;
  /** whether the caller may change or unpublish it */
  can_manage: boolean;
}


/** `POST model-store/{id}/check`'s answer. */
export interface ICheck {
  ok: boolean;
  problems: IProblem[];
  warnings: IProblem[];
  endpoint: {
    name: string;
    project: string;
    resource_group: string;
    image: string;
    slots: { [slot: string]: string };
    replicas: number;
  };
}

export interface IDeployBody {
  project: string;
  resource_group: string;
  replicas: number;
  name?: string;
}

export interface IPublishBody {
  folder: string;
  image: string;
  domain?: string;
  name?: string;
  slots?: { [slot: string]: string };
}

/** The endpoint a deploy made (the fields the page shows). */
export interface IEndpointMade {
  id: string;
  name: string;
  project: string;
  state: string;
  store_model: string | null;
}
