export {
  autoPostForm,
  bodyBytes,
  errorPage,
  headerOf,
  json,
  redirect,
  type HttpEvent,
  type HttpResult,
} from './http';
export { beginLogin, finishLogin, newFlowId, type IdentityProviderLogin } from './login';
export type { DoorLog } from './types';
