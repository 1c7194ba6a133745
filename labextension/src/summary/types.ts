/**
 * The hubgrid API's answers, as far as the Summary and Sessions menus read
 * them. Every amount is a decimal string ("0.3", "2147483648"): exact, never
 * a JS number.
 */

import { INodeShares } from '../gpushares';

/** slot name -> decimal amount */
export type SlotMap = { [slot: string]: string };

export interface IProjectModel {
  name: string;
  domain: string;
  active?: boolean;
  total_resource_slots?: SlotMap;
  max_concurrent_sessions?: number | null;
}

export interface IMeModel {
  name: string;
  domain: string;
  role: string;
  resource_policy: string | null;
  credential?: string;
  projects: IProjectModel[];
  domain_detail?: { total_resource_slots?: SlotMap } | null;
}

export interface IPolicyModel {
  name: string;
  total_resource_slots?: SlotMap;
  unspecified_limited?: boolean;
  max_concurrent_sessions?: number | null;
  max_pending_sessions?: number | null;
  allowed_resource_groups?: string[];
}

export interface IKeypairModel {
  access_key: string;
  resource_policy: string | null;
  active: boolean;
  last_used_at: string | null;
}

export interface IDeviceModel {
  index: number;
  model: string;
  memory?: number;
  /** the share of the device every running session takes ("0.9"; the service's count) */
  taken?: string;
}

export interface INodeModel {
  name: string;
  resource_group: string;
  capacity: SlotMap;
  devices: IDeviceModel[];
  /** what every running session holds on the node (the service's count, whose never said) */
  used?: SlotMap;
  schedulable: boolean;
  /** how the node enforces GPU shares (absent from older services) */
  shares?: INodeShares;
}

export interface IGroupModel {
  name: string;
  description?: string;
  active: boolean;
  session_types: string[];
  nodes: string[];
}

/** One scheduler reason: why a request waits or is refused. */
export interface IReason {
  code: string;
  kind: 'wait' | 'refuse' | string;
  level: string;
  name: string;
  text: string;
  slot?: string | null;
  used?: string | null;
  requested?: string | null;
  limit?: string | null;
}

export interface IGpuShare {
  index: number;
  share: string;
  uuid?: string;
  /** the device memory the share may use, in bytes (0: unknown) */
  memory?: number;
}

export interface IApp {
  name: string;
  url: string;
}

export type AllocationState = 'pending' | 'allocated' | 'released' | 'cancelled';

export interface IAllocation {
  id: string;
  user: string;
  domain: string;
  project: string;
  resource_group: string;
  session_type: string;
  slots: SlotMap;
  state: AllocationState | string;
  node: string | null;
  gpus: IGpuShare[] | null;
  /** how its node enforces GPU shares (null before placement; absent from older services) */
  shares?: INodeShares | null;
  reasons: IReason[] | null;
  created_at: string | null;
  admitted_at: string | null;
  released_at: string | null;
  release_reason: string | null;
  origin: string;
  image: string | null;
  server_name: string | null;
  command: string | null;
  apps: IApp[] | null;
  exit_code: number | null;
  ended_at: string | null;
}
