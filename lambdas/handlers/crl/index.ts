/**
 * The CRL publication's entry point: wired once per execution environment from its configuration, which is
 * read from the environment here and nowhere else.
 */
import { loadCaSideFunctionConfig } from '@pipeline/config';
import { createCrlHandler, wireCrl } from './handler';

export const handler = createCrlHandler(wireCrl(loadCaSideFunctionConfig(process.env)));
