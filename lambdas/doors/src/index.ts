export { bodyBytes, headerOf, json, redirect, type HttpEvent, type HttpResult } from './http';
export {
  beginLogin,
  finishLogin,
  newFlowId,
  type IdentityProviderLogin,
  type LoginOutcome,
  type ProviderAnswer,
  type SignatureToApprove,
} from './login';
export type { DoorLog } from './types';
