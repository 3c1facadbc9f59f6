/**
 * The API function's entry point: wired once per execution environment from its configuration, which is
 * read from the environment here and nowhere else.
 */
import { loadApiFunctionConfig } from '@pipeline/config';
import { createApiHandler, wireApi } from './handler';

export const handler = createApiHandler(wireApi(loadApiFunctionConfig(process.env)));
