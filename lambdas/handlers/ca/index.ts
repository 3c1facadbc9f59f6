/** The CA function's entry point: wired from configuration once per execution environment. */
import { createCaHandler, wireCa } from './handler';

export const handler = createCaHandler(wireCa());
