/**
 * The signer's entry point: wired once per execution environment from its configuration, which is read
 * from the environment here and nowhere else.
 */
import { loadSignerFunctionConfig } from '@pipeline/config';
import { createSignerHandler, wireSigner } from './handler';

export const handler = createSignerHandler(wireSigner(loadSignerFunctionConfig(process.env)));
