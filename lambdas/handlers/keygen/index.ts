/** The keygen function's entry point: wired from configuration once per execution environment. */
import { createKeygenHandler, wireKeygen } from './handler';

export const handler = createKeygenHandler(wireKeygen());
