/** credentials/list and credentials/info: the service's credentials (one per key type), not per citizen. */
import { CSC_CREDENTIALS, credentialById, credentialInfo } from '@pipeline/core/csc';
import { json, type HttpEvent, type HttpResult } from '@pipeline/doors';
import { grantOfBearer, parseBody } from './request';
import type { CscDoorDeps } from './types';

export async function credentialsList(event: HttpEvent, deps: CscDoorDeps): Promise<HttpResult> {
  await grantOfBearer(event, deps, ['service']);
  const body = parseBody(event);
  return json(200, {
    credentialIDs: CSC_CREDENTIALS.map((c) => c.credentialID),
    ...(body.credentialInfo === true
      ? {
          credentialInfos: CSC_CREDENTIALS.map((c) => ({
            credentialID: c.credentialID,
            ...credentialInfo(c),
          })),
        }
      : {}),
  });
}

export async function credentialsInfo(event: HttpEvent, deps: CscDoorDeps): Promise<HttpResult> {
  await grantOfBearer(event, deps, ['service', 'credential']);
  const body = parseBody(event);
  return json(200, credentialInfo(credentialById(body.credentialID)));
}
