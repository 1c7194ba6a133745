import { ServerConnection } from '@jupyterlab/services';

import { requestAPI } from '../request';

/** The roles that see the admin pages; a plain user gets null. */
export type AdminRole = 'superadmin' | 'domain-admin';

/** Who the caller is, as far as the admin pages need it. */
export interface IAdminCaller {
  name: string;
  domain: string;
  role: string;
}

/** The admin role named by a role string, or null for any other role. */
export function roleOf(role: string | null | undefined): AdminRole | null {
  return role === 'superadmin' || role === 'domain-admin' ? role : null;
}

let cached: Promise<IAdminCaller | null> | null = null;

/**
 * The caller (`GET me`), fetched once per page load and shared by every admin
 * plugin; null when the service cannot be reached (then no admin page shows).
 */
export function adminCaller(
  settings: ServerConnection.ISettings
): Promise<IAdminCaller | null> {
  if (!cached) {
    cached = requestAPI<IAdminCaller>('me', settings).catch(error => {
      console.warn('hubgrid admin: GET me failed', error);
      cached = null; // try again next time
      return null;
    });
  }
  return cached;
}

/**
 * The caller's admin role: 'superadmin', 'domain-admin' or null (a plain
 * user, or the service is unreachable). Cached: one `GET me` per page load.
 */
export async function adminRole(
  settings: ServerConnection.ISettings
): Promise<AdminRole | null> {
  const me = await adminCaller(settings);
  return me ? roleOf(me.role) : null;
}

/** Forget the cached caller (tests, or after the role may have changed). */
export function resetAdminRole(): void {
  cached = null;
}
