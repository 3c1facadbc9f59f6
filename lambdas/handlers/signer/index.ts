/** The signer's entry point: wired from configuration once per execution environment. */
import { createSignerHandler, wireSigner } from './handler';

export const handler = createSignerHandler(wireSigner());
