/**
 * What the Summary shows, read from the service in one go (the calls run
 * side by side) and composed by model.ts.
 */

import { HubgridApi } from '../sessions/api';
import {
  bindingPolicy,
  composeLevels,
  groupViews,
  IGroupView,
  ILevel,
  keypairInUse,
  sessionCounts
} from './model';
import { IAllocation, IMeModel } from './types';

export interface ISummary {
  me: IMeModel;
  levels: ILevel[];
  sessions: { running: number; pending: number };
  groups: IGroupView[];
}

export async function loadSummary(api: HubgridApi): Promise<ISummary> {
  const me = await api.me();
  const [policies, keypairs, allocated, pending, groups, nodes] = await Promise.all([
    api.policies(),
    me.credential === 'keypair' ? api.keypairs() : Promise.resolve([]),
    api.allocations('allocated'),
    api.allocations('pending'),
    api.groups(),
    api.nodes()
  ]);
  const allocations: IAllocation[] = [...allocated, ...pending];
  const { policy, via } = bindingPolicy(me, policies, keypairInUse(me, keypairs));
  return {
    me,
    levels: composeLevels(me, policy, allocations, via),
    sessions: sessionCounts(me, allocations),
    // only a superadmin sees every session of a group
    groups: groupViews(
      groups.filter(g => g.active),
      nodes,
      allocations,
      me.name,
      me.role === 'superadmin'
    )
  };
}
