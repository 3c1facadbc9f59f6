/**
 * The OCSP responder's entry point: wired once per execution environment from its configuration, which is
 * read from the environment here and nowhere else.
 */
import { loadCaSideFunctionConfig } from '@pipeline/config';
import { createOcspHandler, wireOcsp } from './handler';

export const handler = createOcspHandler(wireOcsp(loadCaSideFunctionConfig(process.env)));
