import { ServerConnection } from '@jupyterlab/services';

import { requestAPI } from './request';

/** A project as the service describes it (the fields the panel uses). */
export interface IProject {
  name: string;
  domain: string;
}

/** The caller as `GET me` describes them. */
export interface IMe {
  name: string;
  domain: string;
  role: string;
  active: boolean;
  resource_policy: string | null;
  projects: IProject[];
}

/** Who this Lab acts as in hubgrid (the server's owner). */
export function getMe(settings: ServerConnection.ISettings): Promise<IMe> {
  return requestAPI<IMe>('me', settings);
}
