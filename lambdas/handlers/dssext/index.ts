/**
 * The DSS-Ext door function's entry point: wired from its configuration (read from the environment here and
 * nowhere else) once per execution environment, at its first event (its key is read then); a failed wiring
 * is tried again at the next event.
 */
import type { Context } from 'aws-lambda';
import { loadDssExtFunctionConfig } from '@pipeline/config';
import { createDssExtHandler, wireDssExt, type DssExtHandler } from './handler';

let ready: Promise<DssExtHandler> | undefined;

export const handler = (event: Parameters<DssExtHandler>[0], context: Context) => {
  ready ??= wireDssExt(loadDssExtFunctionConfig(process.env))
    .then(createDssExtHandler)
    .catch((err: unknown) => {
      ready = undefined;
      throw err;
    });
  return ready.then((wired) => wired(event, context));
};
