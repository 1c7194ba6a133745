/**
 * Which folders mount into my next session, composed here from the folders
 * I see: no endpoint tells it before a session is admitted (the service
 * resolves mounts in the admission transaction: quota_service/storage/
 * mounts.py, `resolve` and `candidates`). This mirrors those rules:
 *
 * - a session may mount my own folders, the folders of the session's
 *   project (not of my other projects) and folders shared with me, active
 *   ones only;
 * - it mounts the folders the launcher asks for, then every dot-folder
 *   (a name starting with '.') among those, by name; when two dot-folders
 *   would mount at one name, my own wins, then the project's, then a shared one;
 * - read-only when my permission is ro, else read-write. For a project
 *   folder that is the project's permission for its members, for a shared
 *   one the share's.
 */

import { folderKind } from './folders';
import { IDataMe, IFolder, Permission } from './types';

const PRECEDENCE = ['own', 'project', 'shared'] as const;
type MountKind = (typeof PRECEDENCE)[number];

export interface IMountCandidate {
  folder: IFolder;
  kind: MountKind;
  perm: Permission;
}

export interface IPlannedMount {
  folder: string;
  name: string;
  mode: 'ro' | 'rw';
  kind: MountKind;
  /** mounted because its name starts with '.' (not asked for) */
  auto: boolean;
}

export interface IMountPlan {
  mounts: IPlannedMount[];
  /** dot-folders that will not mount, and why */
  skipped: { folder: string; name: string; reason: string }[];
  /** what is wrong with the requested folders (the service would refuse: 422) */
  problems: string[];
}

/**
 * The folders I may mount in a session of `project` (`domain/name` as in
 * `GET me`'s projects). `sharedWithMe`: ids of folders shared with me by
 * an accepted invitation — needed for admins, who see every folder of
 * their domain without holding a share; for others, every user folder not
 * mine that they see is shared with them.
 */
export function mountCandidates(
  folders: IFolder[],
  me: IDataMe,
  project: { domain: string; name: string } | null,
  sharedWithMe?: Set<string>
): IMountCandidate[] {
  const out: IMountCandidate[] = [];
  const admin = me.role !== 'user';
  for (const f of folders) {
    const kind = folderKind(f, me);
    if (kind === 'mine') {
      out.push({ folder: f, kind: 'own', perm: 'wd' });
    } else if (kind === 'project') {
      if (
        project !== null &&
        f.owner.project === project.name &&
        f.owner.domain === project.domain &&
        project.domain === me.domain
      ) {
        out.push({
          folder: f,
          kind: 'project',
          perm: f.project_permission ?? 'ro'
        });
      }
    } else if (f.owner.domain === me.domain) {
      if (!admin) {
        out.push({ folder: f, kind: 'shared', perm: f.permission });
      } else if (sharedWithMe?.has(f.id)) {
        out.push({ folder: f, kind: 'shared', perm: f.permission });
      }
    }
  }
  return out.sort(
    (a, b) =>
      a.folder.name.localeCompare(b.folder.name) ||
      a.folder.id.localeCompare(b.folder.id)
  );
}

function byName(a: IMountCandidate, b: IMountCandidate): number {
  if (a.folder.name !== b.folder.name) {
    return a.folder.name < b.folder.name ? -1 : 1;
  }
  return (
    PRECEDENCE.indexOf(a.kind) - PRECEDENCE.indexOf(b.kind) ||
    (a.folder.id < b.folder.id ? -1 : a.folder.id > b.folder.id ? 1 : 0)
  );
}

/**
 * The mounts of a session asking for `requested` (names or ids), as the
 * service would resolve them. Unlike the service, a problem does not stop
 * the plan: it is listed, and the folder left out.
 */
export function planMounts(
  candidates: IMountCandidate[],
  requested: string[] = []
): IMountPlan {
  const active = candidates.filter(c => c.folder.status === 'active');
  const chosen: IMountCandidate[] = [];
  const problems: string[] = [];
  for (const item of requested) {
    const byId = active.filter(c => c.folder.id === item);
    const matches = byId.length ? byId : active.filter(c => c.folder.name === item);
    if (matches.length === 0) {
      const trashed = candidates.some(
        c => c.folder.id === item || c.folder.name === item
      );
      problems.push(
        trashed
          ? `${item} is in the trash: restore it to mount it`
          : `no folder ${item} you may mount in this project`
      );
      continue;
    }
    if (matches.length > 1) {
      problems.push(`${item} names ${matches.length} folders: pick one by its id`);
      continue;
    }
    const c = matches[0];
    if (chosen.includes(c)) {
      problems.push(`${c.folder.name} is asked for twice`);
      continue;
    }
    if (chosen.some(o => o.folder.name === c.folder.name)) {
      problems.push(`two folders would mount at ${c.folder.name}: rename one`);
      continue;
    }
    chosen.push(c);
  }
  const mounts: IPlannedMount[] = chosen.map(c => mount(c, false));
  const taken = new Set(chosen.map(c => c.folder.name));
  const skipped: IMountPlan['skipped'] = [];
  const auto = active
    .filter(c => c.folder.name.startsWith('.') && !chosen.includes(c))
    .sort(byName);
  for (const c of auto) {
    if (taken.has(c.folder.name)) {
      skipped.push({
        folder: c.folder.id,
        name: c.folder.name,
        reason: `another folder mounts at ${c.folder.name}`
      });
      continue;
    }
    taken.add(c.folder.name);
    mounts.push(mount(c, true));
  }
  return { mounts, skipped, problems };
}

function mount(c: IMountCandidate, auto: boolean): IPlannedMount {
  return {
    folder: c.folder.id,
    name: c.folder.name,
    mode: c.perm === 'ro' ? 'ro' : 'rw',
    kind: c.kind,
    auto
  };
}
