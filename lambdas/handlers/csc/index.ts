/** The CSC API function's entry point: wired from configuration once per execution environment. */
import { createCscHandler, wireCsc } from './handler';

export const handler = createCscHandler(wireCsc());
