/**
 * The TSA's entry point: wired once per execution environment from its configuration, which is read from
 * the environment here and nowhere else.
 */
import { loadCaSideFunctionConfig } from '@pipeline/config';
import { createTsaHandler, wireTsa } from './handler';

export const handler = createTsaHandler(wireTsa(loadCaSideFunctionConfig(process.env)));
