import { RemovalPolicy } from 'aws-cdk-lib';
import * as apigw from 'aws-cdk-lib/aws-apigateway';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import openapi from '../../../lambdas/api/openapi.json';
import type { ApiLimits } from '@pipeline/config';
import { messageOf, type HttpErrorCode } from '@pipeline/core';
import { API_STAGE, ROUTES, type RouteDefinition } from '@pipeline/resources';
import { modelSchema } from '../openapi-models';

export interface SigningApiProps {
  readonly handler: lambda.IFunction;
  /** The stage throttle (each method), and each client's throttle and daily quota (the usage plan). */
  readonly limits: ApiLimits;
  /** One API key per calling e-service, for per-client usage plan throttling and quota. */
  readonly clients: readonly string[];
}

interface OpenApiOperation {
  readonly parameters?: { name: string; in: string; required?: boolean }[];
  readonly requestBody?: { content?: Record<string, { schema?: { $ref?: string } }> };
}

/**
 * REST API over ROUTES (the routes the local gateway serves too), stage `v1`. Every authenticated method
 * requires SigV4 (IAM) and an API key, which binds the caller to a usage plan with its own throttle and
 * daily quota, below the stage's throttle so that one client leaves room for the others; the health
 * check is open and says only whether the service is up. Throttled and over-quota answers carry the
 * API's error body. Bodies and parameters are validated against the OpenAPI document before the function
 * runs. Execution logs are ERROR level without data tracing: request bodies (digests, identities) are
 * never logged.
 */
export class SigningApi extends Construct {
  public readonly restApi: apigw.RestApi;
  public readonly usagePlan: apigw.UsagePlan;
  /** Each client's API key, by client name. */
  public readonly apiKeys: Readonly<Record<string, apigw.IApiKey>> = {};

  public constructor(scope: Construct, id: string, props: SigningApiProps) {
    super(scope, id);
    const accessLogs = new logs.LogGroup(this, 'AccessLogs', {
      retention: logs.RetentionDays.ONE_YEAR,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    this.restApi = new apigw.RestApi(this, 'RestApi', {
      description: 'HSM signing pipeline: one-time-key signatures',
      endpointTypes: [apigw.EndpointType.REGIONAL],
      cloudWatchRole: true,
      cloudWatchRoleRemovalPolicy: RemovalPolicy.RETAIN,
      defaultMethodOptions: { authorizationType: apigw.AuthorizationType.IAM },
      deployOptions: {
        stageName: API_STAGE,
        accessLogDestination: new apigw.LogGroupLogDestination(accessLogs),
        accessLogFormat: apigw.AccessLogFormat.jsonWithStandardFields(),
        loggingLevel: apigw.MethodLoggingLevel.ERROR,
        dataTraceEnabled: false,
        metricsEnabled: true,
        // Applied to each method of the stage, whoever calls it.
        throttlingRateLimit: props.limits.stage.rateLimit,
        throttlingBurstLimit: props.limits.stage.burstLimit,
      },
    });
    const integration = new apigw.LambdaIntegration(props.handler, { proxy: true, allowTestInvoke: false });
    const validators = {
      body: this.restApi.addRequestValidator('BodyAndParameters', {
        validateRequestBody: true,
        validateRequestParameters: true,
      }),
      parameters: this.restApi.addRequestValidator('ParametersOnly', { validateRequestParameters: true }),
    };
    for (const route of ROUTES) {
      const operation = openApiOperation(route);
      const body = operation.requestBody?.content?.['application/json']?.schema?.$ref?.split('/').pop();
      this.restApi.root.resourceForPath(route.resource).addMethod(route.method, integration, {
        // Health answers anyone (liveness only: its details need an identified caller, see the handler).
        authorizationType: route.authenticated ? apigw.AuthorizationType.IAM : apigw.AuthorizationType.NONE,
        apiKeyRequired: route.authenticated,
        requestValidator: body ? validators.body : validators.parameters,
        requestParameters: requestParameters(operation),
        requestModels: body
          ? {
              'application/json': this.restApi.addModel(`${body}Model`, {
                contentType: 'application/json',
                modelName: body,
                schema: modelSchema(body),
              }),
            }
          : undefined,
      });
    }
    const { client } = props.limits;
    this.usagePlan = this.restApi.addUsagePlan('UsagePlan', {
      description: 'Per e-service throttle and daily quota of the sign request API',
      throttle: { rateLimit: client.rateLimit, burstLimit: client.burstLimit },
      quota: client.quotaPerDay > 0 ? { limit: client.quotaPerDay, period: apigw.Period.DAY } : undefined,
      apiStages: [{ api: this.restApi, stage: this.restApi.deploymentStage }],
    });
    // API Gateway answers these itself; the same codes and body as the local gateway. A quota renews with
    // the next day, a time a static header cannot state, so only a throttle carries Retry-After.
    this.restApi.addGatewayResponse('Throttled', {
      type: apigw.ResponseType.THROTTLED,
      statusCode: '429',
      responseHeaders: { 'Retry-After': "'1'" },
      templates: { 'application/json': errorBody('THROTTLED') },
    });
    this.restApi.addGatewayResponse('QuotaExceeded', {
      type: apigw.ResponseType.QUOTA_EXCEEDED,
      statusCode: '429',
      templates: {
        'application/json': errorBody('QUOTA_EXCEEDED'),
      },
    });
    for (const client of props.clients) {
      // The key value is generated by API Gateway; it never appears in the template or the code.
      const key = new apigw.ApiKey(this, `ApiKey-${client}`, { description: `e-service ${client}` });
      this.usagePlan.addApiKey(key);
      (this.apiKeys as Record<string, apigw.IApiKey>)[client] = key;
    }
  }
}

/** The API's Error schema as a gateway response template, with the code's registered message. */
function errorBody(code: HttpErrorCode): string {
  return JSON.stringify({ error: { code, message: messageOf(code) } });
}

/** The OpenAPI operation of a route (paths there include the stage). */
function openApiOperation(route: RouteDefinition): OpenApiOperation {
  const path = (openapi.paths as Record<string, Record<string, OpenApiOperation>>)[
    `/${API_STAGE}${route.resource}`
  ];
  const operation = path?.[route.method.toLowerCase()];
  if (!operation) throw new Error(`route ${route.method} ${route.resource} is not in the OpenAPI document`);
  return operation;
}

function requestParameters(operation: OpenApiOperation): Record<string, boolean> | undefined {
  const entries = (operation.parameters ?? [])
    .filter((p) => p.in === 'path' || p.in === 'query')
    .map((p) => [
      `method.request.${p.in === 'query' ? 'querystring' : 'path'}.${p.name}`,
      p.in === 'path' || !!p.required,
    ]);
  return entries.length > 0 ? Object.fromEntries(entries) : undefined;
}
