/**
 * The service's serving models as the Serving page reads them
 * (`GET endpoints`, `GET endpoints/{id}`, tokens, validate; docs/serving.md).
 * Every amount is an exact string, as the service writes it.
 */

import type { IProblem } from '../problems';

export type { IProblem };

export type SlotMap = { [slot: string]: string };

export interface IReplica {
  name: string;
  /** queued, starting, serving; failed / ended for the last one that failed */
  state: string;
  node: string | null;
  allocation: string;
  started_at: string | null;
  serving_since: string | null;
  reason: string;
}

export interface IProbe {
  at: string;
  up: boolean;
  status: string;
  check: string;
  detail: string;
}

export interface IReplicaHealth {
  name: string;
  up: boolean;
  status: string;
  check: string;
  detail: string;
  calls?: number;
  history?: IProbe[];
}

export interface IHealth {
  status: 'healthy' | 'degraded' | 'down' | 'unknown' | string;
  reachable: boolean | null;
  replicas_wanted: number | null;
  replicas_up: number | null;
  replicas: IReplicaHealth[];
  reported_at?: string | null;
  calls?: { [code: string]: number };
  measured?: { [metric: string]: string };
}

export interface IRule {
  metric: 'requests_per_second' | 'in_flight';
  comparator: 'gt' | 'ge' | 'lt' | 'le';
  threshold: string;
  step: number;
  cooldown: number;
  min_replicas: number;
  max_replicas: number;
}

export interface IScalingEvent {
  at: string;
  rule?: number | null;
  outcome: string;
  reason: string;
  replicas_before?: number;
  replicas_after?: number;
  count?: number;
  last_at?: string;
}

export interface IEndpoint {
  id: string;
  name: string;
  domain: string;
  project: string;
  resource_group: string;
  image: string;
  model_folder: { id: string; name: string | null };
  slots: SlotMap;
  replicas: number;
  running_replicas: number;
  replicas_detail: IReplica[];
  public: boolean;
  state: string;
  state_reason: string | null;
  created_by: string;
  created_at: string;
  autoscaling: IRule[];
  scaling_events: IScalingEvent[];
  health?: IHealth;
}

export interface IToken {
  id: string;
  endpoint: string;
  created_by: string;
  created_at: string;
  expires_at: string;
  revoked_at: string | null;
  state: 'active' | 'expired' | 'revoked' | string;
  /** the secret: in the create answer only */
  token?: string;
}


export interface IValidation {
  ok: boolean;
  problems: IProblem[];
  warnings: IProblem[];
  definition?: unknown;
}

/** What the create form asks for. */
export interface ICreateBody {
  name: string;
  project: string;
  resource_group: string;
  image: string;
  model_folder: string;
  slots: SlotMap;
  replicas: number;
}
