/** The TSA's entry point: wired from configuration once per execution environment. */
import { createTsaHandler, wireTsa } from './handler';

export const handler = createTsaHandler(wireTsa());
