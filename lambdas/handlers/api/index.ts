/** The API function's entry point: wired from configuration once per execution environment. */
import { createApiHandler, wireApi } from './handler';

export const handler = createApiHandler(wireApi());
