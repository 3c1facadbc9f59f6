/** The OCSP responder's entry point: wired from configuration once per execution environment. */
import { createOcspHandler, wireOcsp } from './handler';

export const handler = createOcspHandler(wireOcsp());
