/** The CRL publication's entry point: wired from configuration once per execution environment. */
import { createCrlHandler, wireCrl } from './handler';

export const handler = createCrlHandler(wireCrl());
