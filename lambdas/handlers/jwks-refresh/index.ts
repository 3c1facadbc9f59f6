/** The JWKS refresh's entry point: wired from configuration once per execution environment. */
import { createJwksRefreshHandler, wireJwksRefresh } from './handler';

export const handler = createJwksRefreshHandler(wireJwksRefresh());
