/**
 * The keygen function's entry point: wired once per execution environment from its configuration, which is
 * read from the environment here and nowhere else.
 */
import { loadKeygenFunctionConfig } from '@pipeline/config';
import { createKeygenHandler, wireKeygen } from './handler';

export const handler = createKeygenHandler(wireKeygen(loadKeygenFunctionConfig(process.env)));
