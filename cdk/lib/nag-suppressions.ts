import { Validations, type CfnElement, type Stack } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';
import type { RestApi } from 'aws-cdk-lib/aws-apigateway';
import { CSC_BASE_PATH, CSC_ROUTES, DSSEXT_BASE_PATH, DSSEXT_ROUTES } from '@pipeline/resources';
import type { SigningApi } from './constructs/api';
import type { AuditAnchors } from './constructs/audit-anchors';
import type { CscApi } from './constructs/csc-api';
import type { CscSecrets } from './constructs/csc-secrets';
import type { DssExtApi } from './constructs/dssext-api';
import type { DssExtSecrets } from './constructs/dssext-secrets';
import type { PipelineFunctions } from './constructs/functions';
import type { HsmAccess } from './constructs/hsm-access';
import type { Network } from './constructs/network';
import type { PublicPki } from './constructs/public-pki';

/**
 * The parts of the stack whose findings are acknowledged: the stack passes itself. Named here, not as
 * the stack's class, so that this module and the stack do not import each other.
 */
export interface NagSubject extends Pick<Stack, 'getLogicalId'> {
  readonly api: SigningApi;
  readonly cscApi?: CscApi;
  readonly auditAnchors: AuditAnchors;
  readonly cscSecrets?: CscSecrets;
  readonly dssExtApi?: DssExtApi;
  readonly dssExtSecrets?: DssExtSecrets;
  readonly functions: PipelineFunctions;
  readonly hsm: HsmAccess;
  readonly network: Network;
  readonly pki: PublicPki;
}

/** A cdk-nag finding acknowledged on a construct, with the reason it is acceptable here. */
export interface NagAcknowledgement {
  readonly scope: IConstruct;
  readonly id: string;
  readonly reason: string;
}

/**
 * Every cdk-nag (AwsSolutions) finding this stack accepts, each on the narrowest construct and with its
 * reason. Anything not listed fails the synth (and the infra tests).
 */
export function addNagSuppressions(stack: NagSubject): NagAcknowledgement[] {
  const acknowledgements: NagAcknowledgement[] = [];
  const ack: Ack = (scope, id, reason) => {
    Validations.of(scope).acknowledge({ id, reason });
    acknowledgements.push({ scope, id, reason });
  };
  acknowledgeFunctions(stack, ack);
  acknowledgeSecretsAndAnchors(stack, ack);
  acknowledgeNetwork(stack, ack);
  acknowledgeSigningApi(stack, ack);
  if (stack.cscApi) acknowledgeCscApi(stack.cscApi.restApi, ack);
  if (stack.dssExtApi) acknowledgeDssExtApi(stack.dssExtApi.restApi, ack);
  acknowledgePublicPki(stack, ack);
  return acknowledgements;
}

type Ack = (scope: IConstruct, id: string, reason: string) => void;

/** Managed execution policies and the tracing wildcard of every function role. */
function acknowledgeFunctions(stack: NagSubject, ack: Ack): void {
  const functionRoles = [
    stack.functions.api,
    stack.functions.signer,
    stack.functions.keygen,
    stack.functions.ca,
    stack.functions.revoke,
    stack.functions.reconcile,
    stack.functions.crl,
    stack.functions.ocsp,
    stack.functions.tsa,
    stack.functions.auditCheckpoint,
    ...(stack.functions.dssext ? [stack.functions.dssext] : []),
  ];
  const outsideVpc = [stack.functions.jwksRefresh, ...(stack.functions.csc ? [stack.functions.csc] : [])];
  for (const fn of outsideVpc) {
    ack(
      fn.role!,
      'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
      'AWS managed policy limited to writing the function its own CloudWatch Logs; the function runs outside ' +
        'the VPC (it reaches an identity provider on the internet).',
    );
  }

  for (const fn of [...functionRoles, ...outsideVpc]) {
    const policy = fn.role!.node.tryFindChild('DefaultPolicy');
    ack(
      policy ?? fn.role!,
      'AwsSolutions-IAM5[Resource::*]',
      'Active tracing: xray:PutTraceSegments and xray:PutTelemetryRecords have no resource-level permissions ' +
        '(AWS documents Resource "*" for them); no other statement of these policies uses a wildcard resource.',
    );
  }
  for (const fn of functionRoles) {
    ack(
      fn.role!,
      'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole]',
      'AWS managed policy limited to CloudWatch Logs writes and the ENI management every VPC function needs; ' +
        'a hand-written copy would carry the same ec2:*NetworkInterface actions on Resource::*.',
    );
  }
}

/** The crypto users' secrets (rotated with the HSM user) and the checkpointer's anchor objects. */
function acknowledgeSecretsAndAnchors(stack: NagSubject, ack: Ack): void {
  for (const secret of [
    stack.hsm.poolUserSecret,
    stack.hsm.caUserSecret,
    stack.hsm.ocspUserSecret,
    stack.hsm.tsaUserSecret,
    stack.hsm.revokeUserSecret,
  ]) {
    ack(
      secret,
      'AwsSolutions-SMG4',
      'The secret is a CloudHSM crypto user password: rotating it means changing the user in the HSM ' +
        '(cloudhsm-cli user change-password) and the secret together, an operator procedure in ' +
        'docs/operations.md; a Secrets Manager rotation Lambda cannot log in to the cluster as admin.',
    );
  }
  if (stack.cscSecrets) acknowledgeCscSecrets(stack.cscSecrets, ack);
  if (stack.dssExtSecrets) acknowledgeDssExtSecrets(stack.dssExtSecrets, ack);
  ack(
    stack.functions.auditCheckpoint.role!.node.tryFindChild('DefaultPolicy')!,
    `AwsSolutions-IAM5[Resource::<${stack.getLogicalId(stack.auditAnchors.bucket.node.defaultChild as CfnElement)}.Arn>/checkpoints/*]`,
    'The checkpointer writes one object per checkpoint, named by its sequence, under checkpoints/ of the ' +
      'anchors bucket: the keys are not known in advance. Object Lock (compliance) keeps every version.',
  );
}

/** The CSC API's secrets: values the operator registers elsewhere, not rotatable by a Lambda. */
function acknowledgeCscSecrets(secrets: CscSecrets, ack: Ack): void {
  ack(
    secrets.idpClientKey,
    'AwsSolutions-SMG4',
    "The secret is the CSC API's private JWK registered at the OpenID Provider: a new key must be " +
      'registered at the provider before it is used, an operator procedure (docs/operations.md) no rotation ' +
      'Lambda can perform.',
  );
  ack(
    secrets.clients,
    'AwsSolutions-SMG4',
    "The secret holds the registered CSC clients' secret hashes, not secrets: a client's secret changes " +
      'when the client is given a new one, an operator procedure (docs/operations.md).',
  );
}

/** The DSS-Ext door's secrets: a key registered in the federation, and the federation's own document. */
function acknowledgeDssExtSecrets(secrets: DssExtSecrets, ack: Ack): void {
  ack(
    secrets.serviceKey,
    'AwsSolutions-SMG4',
    "The secret is the DSS-Ext door's private key, whose certificate is registered in the federation's " +
      'metadata and with the e-services: a new key must be published there before it is used, an operator ' +
      'procedure (docs/operations.md) no rotation Lambda can perform.',
  );
  ack(
    secrets.federationMetadata,
    'AwsSolutions-SMG4',
    "The secret holds the federation's metadata, signed and published by its operator, not a credential: " +
      'the operator puts each new edition (docs/operations.md).',
  );
}

function acknowledgeNetwork(stack: NagSubject, ack: Ack): void {
  // Interface endpoints' own security groups admit HTTPS from the VPC CIDR (Fn::GetAtt), which the rule
  // cannot evaluate; the source is the VPC, never 0.0.0.0/0.
  for (const child of stack.network.vpc.node.children) {
    const group = child.node.tryFindChild('SecurityGroup');
    if (group) {
      ack(
        group,
        'AwsSolutions-EC23',
        'VPC endpoint security group: ingress is HTTPS from the VPC CIDR only (an intrinsic the rule cannot read).',
      );
    }
  }
}

/** The sign request API: IAM-authorized e-services, an anonymous health check. */
function acknowledgeSigningApi(stack: NagSubject, ack: Ack): void {
  ack(
    stack.api.restApi,
    'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]',
    'The account-level role API Gateway uses to write execution and access logs; AWS documents this managed policy for it.',
  );
  ack(
    stack.api.restApi,
    'AwsSolutions-COG4',
    'Callers are e-services authenticated with SigV4 (IAM authorization on every method) plus an API key per ' +
      'usage plan; there are no end users to sign in with a Cognito user pool.',
  );
  ack(
    stack.api.restApi,
    'AwsSolutions-APIG3',
    'Every sign request method requires SigV4 from an IAM principal the operator granted ' +
      'execute-api:Invoke, and the usage plan throttles per client; anonymous traffic is rejected before ' +
      'integration. Health is throttled at the stage. A WAF web ACL can be associated to the v1 stage where policy demands it.',
  );
  const health = stack.api.restApi.root.resourceForPath('/health').node.tryFindChild('GET');
  if (health) {
    for (const id of ['AwsSolutions-APIG4', 'AwsSolutions-COG4']) {
      ack(
        health,
        id,
        'The health check answers anonymous callers (load balancers) with liveness only; pool and queue ' +
          'depths are not in that answer (they are metrics).',
      );
    }
  }
}

/**
 * The CSC API's methods: no IAM or API key at the gateway, because its callers are OAuth 2.0 clients
 * (and, on the callback, the citizen's browser) that authenticate to the function (docs/csc.md).
 */
function acknowledgeCscApi(api: RestApi, ack: Ack): void {
  ack(
    api,
    'AwsSolutions-APIG2',
    'No request validation at the gateway: the CSC function answers every malformed request in the CSC ' +
      'error form ({error, error_description}), which a gateway 400 would not be.',
  );
  for (const route of CSC_ROUTES) {
    const method = api.root
      .resourceForPath(`${CSC_BASE_PATH}${route.resource}`)
      .node.tryFindChild(route.method);
    if (!method) throw new Error(`CSC method ${route.method} ${route.resource} is missing`);
    for (const id of ['AwsSolutions-APIG4', 'AwsSolutions-COG4']) {
      ack(
        method,
        id,
        'CSC API v2 method: the CSC client authenticates to the function with OAuth 2.0 (client secret at ' +
          'oauth2/token, a bearer access token on the credentials and signatures methods; authorize and the ' +
          "provider's callback are the citizen's browser), which API Gateway's IAM or Cognito cannot check. " +
          'Throttled per method at the stage.',
      );
    }
  }
}

/**
 * The DSS-Ext door's methods: no IAM or API key at the gateway, because its callers are citizens'
 * browsers carrying signed messages (the e-service's SignRequest, the identity provider's answer) that
 * the function verifies (docs/dss-ext.md).
 */
function acknowledgeDssExtApi(api: RestApi, ack: Ack): void {
  ack(
    api,
    'AwsSolutions-APIG2',
    'No request validation at the gateway: the door answers every malformed request itself (a page, or an ' +
      "error SignResponse to the e-service's return URL), which a gateway 400 would not be.",
  );
  for (const route of DSSEXT_ROUTES) {
    const method = api.root
      .resourceForPath(`${DSSEXT_BASE_PATH}${route.resource}`)
      .node.tryFindChild(route.method);
    if (!method) throw new Error(`DSS-Ext method ${route.method} ${route.resource} is missing`);
    for (const id of ['AwsSolutions-APIG4', 'AwsSolutions-COG4']) {
      ack(
        method,
        id,
        "DSS-Ext door method: the citizen's browser posts the e-service's signed SignRequest and the " +
          "identity provider's signed answer; the function verifies those signatures against the registered " +
          "e-services' certificates and the federation's metadata, which API Gateway's IAM or Cognito cannot " +
          'check. Throttled per method at the stage, limited per source by its web ACL.',
      );
    }
  }
}

/** The public PKI endpoint: what relying parties fetch without credentials, by design of the standards. */
function acknowledgePublicPki(stack: NagSubject, ack: Ack): void {
  const { pki } = stack;
  ack(
    pki.ocspApi,
    'AwsSolutions-APIG2',
    'OCSP bodies are binary DER (RFC 6960), which API Gateway models cannot describe; the responder bounds ' +
      'their size and parses them strictly, answering malformedRequest to anything else.',
  );
  for (const id of ['AwsSolutions-APIG4', 'AwsSolutions-COG4']) {
    ack(
      pki.ocspApi,
      id,
      'OCSP is a public service (RFC 6960): any relying party asks about any certificate without credentials; ' +
        'answers carry no personal data (serial numbers and status only).',
    );
  }
  ack(
    pki.distribution,
    'AwsSolutions-CFR1',
    'Relying parties anywhere must be able to check revocation of signatures: no geographic restriction.',
  );
  if (!pki.edgeWebAclArn) {
    ack(
      pki.distribution,
      'AwsSolutions-CFR2',
      'Placeholder synth only: a deploy requires pkiEdgeWebAclArn, the CloudFront-scope web ACL of ' +
        'PkiEdgeStack (us-east-1) that limits each source at the distribution.',
    );
  }
  ack(
    pki.distribution,
    'AwsSolutions-CFR4',
    'Plain HTTP is required for CRL distribution points and AIA (RFC 5280 4.2.1.13, 4.2.2.1); HTTPS uses the ' +
      'default certificate, whose policy CloudFront fixes. A custom domain (pkiBaseUrl) with its own ' +
      'certificate can enforce TLS 1.2 for HTTPS viewers.',
  );
}
