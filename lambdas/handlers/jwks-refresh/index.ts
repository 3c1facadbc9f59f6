/**
 * The JWKS refresh's entry point: wired once per execution environment from its configuration, which is
 * read from the environment here and nowhere else.
 */
import { loadJwksRefreshFunctionConfig } from '@pipeline/config';
import { createJwksRefreshHandler, wireJwksRefresh } from './handler';

export const handler = createJwksRefreshHandler(wireJwksRefresh(loadJwksRefreshFunctionConfig(process.env)));
