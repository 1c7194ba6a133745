/**
 * The hubgrid API's answers the ops admin pages read (resource groups and
 * grants, nodes with their GPU holders, a group's queue, every session,
 * images). Amounts are decimal strings, never JS numbers.
 */

import { INodeShares } from '../../gpushares';
import { IAllocation, IReason, SlotMap } from '../../summary/types';

export { IAllocation, IReason, SlotMap };

export interface IGrant {
  domain?: string;
  project?: string;
  user?: string;
}

export interface IAdminGroup {
  name: string;
  description?: string;
  active: boolean;
  session_types: string[];
  queue_order: string;
  hol_passes?: number;
  pending_timeout: number | null;
  nodes: string[];
  /** superadmins only */
  grants?: IGrant[];
}

export interface IUntilEmpty {
  seconds: number | null;
  at: string | null;
  sessions: number;
  unlimited: number;
}

export interface IGpuHolderModel {
  allocation: string;
  user: string;
  domain: string;
  project: string;
  share: string;
  server_name?: string;
  origin?: string;
  /** the device memory the share may use, bytes (0: unknown) */
  memory?: number;
}

export interface IAdminDevice {
  index: number;
  model: string;
  memory?: number;
  taken?: string;
  free?: string;
  holders?: IGpuHolderModel[];
  /** the share held by sessions the caller may not see */
  others?: string;
}

export interface INodeSession {
  id: string;
  user: string;
  domain: string;
  project: string;
  server_name?: string;
  origin?: string;
  slots: SlotMap;
  gpus: Array<{ index: number; share: string }>;
  started_at: string | null;
  ends_at: string | null;
}

export interface IAdminNode {
  name: string;
  resource_group: string;
  capacity: SlotMap;
  devices: IAdminDevice[];
  used?: SlotMap;
  schedulable: boolean;
  backend_url?: string;
  until_empty?: IUntilEmpty;
  sessions?: INodeSession[];
  other_sessions?: number;
  /** how it enforces GPU shares (absent from older services) */
  shares?: INodeShares;
}

export interface IQueueEntry {
  position: number;
  visible: boolean;
  id?: string;
  user?: string;
  domain?: string;
  project?: string;
  slots?: SlotMap;
  session_type?: string;
  priority?: number;
  created_at?: string | null;
  queue_at?: string | null;
  passes?: number;
  waits_for?: 'capacity' | 'limits' | null;
  holds_line?: boolean;
  reasons?: IReason[];
  origin?: string;
  server_name?: string;
}

export interface IQueue {
  resource_group: string;
  queue_order: string;
  hol_passes: number;
  pending_timeout: number | null;
  pending: number;
  hidden: number;
  entries: IQueueEntry[];
}

export interface IServicePort {
  name: string;
  protocol: string;
  path: string;
}

export interface IImage {
  name: string;
  labels?: { [label: string]: string };
  min_slots: SlotMap;
  service_ports: IServicePort[];
  domains: string[];
  source?: string;
  created_at?: string | null;
  updated_at?: string | null;
}

export interface IScanHost {
  url: string;
  ok: boolean;
  images?: number;
  error?: string;
}

export interface IScanResult {
  hosts: IScanHost[];
  added: string[];
  updated: string[];
  unchanged: string[];
  skipped: Array<{ name: string; reason: string }>;
}
