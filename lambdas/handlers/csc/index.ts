/**
 * The CSC API function's entry point: wired from its configuration (read from the environment here and
 * nowhere else) once per execution environment, at its first event (its secrets are read then); a failed
 * wiring is tried again at the next event.
 */
import type { Context } from 'aws-lambda';
import { loadCscFunctionConfig } from '@pipeline/config';
import { createCscHandler, wireCsc, type CscHandler } from './handler';

let ready: Promise<CscHandler> | undefined;

export const handler = (event: Parameters<CscHandler>[0], context: Context) => {
  ready ??= wireCsc(loadCscFunctionConfig(process.env))
    .then(createCscHandler)
    .catch((err: unknown) => {
      ready = undefined;
      throw err;
    });
  return ready.then((wired) => wired(event, context));
};
