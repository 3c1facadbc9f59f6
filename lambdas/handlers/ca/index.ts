/**
 * The CA function's entry point: wired once per execution environment from its configuration, which is
 * read from the environment here and nowhere else.
 */
import { loadCaFunctionConfig } from '@pipeline/config';
import { createCaHandler, wireCa } from './handler';

export const handler = createCaHandler(wireCa(loadCaFunctionConfig(process.env)));
