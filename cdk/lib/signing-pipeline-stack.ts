import { Aspects, CfnOutput, Stack, Tags, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { ENV } from '@pipeline/config';
import { SigningApi } from './constructs/api';
import { CscApi } from './constructs/csc-api';
import { AuditAnchors } from './constructs/audit-anchors';
import { CscSecrets } from './constructs/csc-secrets';
import { DssExtApi } from './constructs/dssext-api';
import { DssExtSecrets } from './constructs/dssext-secrets';
import { PipelineFunctions } from './constructs/functions';
import { HsmAccess } from './constructs/hsm-access';
import { IdentityTrust } from './constructs/identity-trust';
import { Network } from './constructs/network';
import { Observability } from './constructs/observability';
import { PublicPki } from './constructs/public-pki';
import { SignQueue } from './constructs/sign-queue';
import { Tables } from './constructs/tables';
import { RetainExceptOnCreate } from './retain-except-on-create';
import { addNagSuppressions, type NagAcknowledgement } from './nag-suppressions';
import type { StackSettings } from './settings';

export interface SigningPipelineStackProps extends StackProps {
  readonly settings: StackSettings;
}

/**
 * The whole pipeline in one stack: its parts share a VPC, keys and the cluster's security group, and are
 * deployed and rolled back together. The CloudHSM cluster itself is not in it (CloudFormation has no
 * resource for clusters): the stack takes an existing cluster's id, security group and CA certificate.
 */
export class SigningPipelineStack extends Stack {
  public readonly network: Network;
  public readonly hsm: HsmAccess;
  public readonly tables: Tables;
  public readonly signQueue: SignQueue;
  public readonly identity: IdentityTrust;
  /** Where the CSC API is deployed (settings.csc). */
  public readonly cscSecrets?: CscSecrets;
  /** Where the DSS-Ext door is deployed (settings.dssExt). */
  public readonly dssExtSecrets?: DssExtSecrets;
  public readonly functions: PipelineFunctions;
  public readonly auditAnchors: AuditAnchors;
  public readonly api: SigningApi;
  /** The CSC API v2, where deployed (settings.csc). */
  public readonly cscApi?: CscApi;
  /** The DSS-Ext door, where deployed (settings.dssExt). */
  public readonly dssExtApi?: DssExtApi;
  public readonly pki: PublicPki;
  public readonly observability: Observability;
  /** cdk-nag findings this stack accepts, with reasons (see nag-suppressions.ts). */
  public readonly nagAcknowledgements: NagAcknowledgement[];

  public constructor(scope: Construct, id: string, props: SigningPipelineStackProps) {
    super(scope, id, props);
    const { settings } = props;
    Tags.of(this).add('project', 'signing-pipeline');
    Tags.of(this).add('cloudhsm-cluster', settings.hsm.clusterId);

    this.network = new Network(this, 'Network', { existing: settings.vpc });
    this.hsm = new HsmAccess(this, 'HsmAccess', {
      vpc: this.network.vpc,
      hsm: settings.hsm,
      layerPath: settings.layerPath,
      caCertsParameterPrefix: settings.caCertsParameterPrefix,
    });
    this.tables = new Tables(this, 'Tables');
    this.signQueue = new SignQueue(this, 'SignQueue');
    this.identity = new IdentityTrust(this, 'IdentityTrust', settings.identity);
    if (settings.csc) {
      this.cscSecrets = new CscSecrets(this, 'CscSecrets', { encryptionKey: this.hsm.secretsKey });
    }
    if (settings.dssExt) {
      this.dssExtSecrets = new DssExtSecrets(this, 'DssExtSecrets', { encryptionKey: this.hsm.secretsKey });
    }
    this.functions = new PipelineFunctions(this, 'Functions', {
      identity: this.identity,
      cscSecrets: this.cscSecrets,
      dssExtSecrets: this.dssExtSecrets,
      vpc: this.network.vpc,
      subnets: this.network.functionSubnets,
      hsm: this.hsm,
      tables: this.tables,
      signQueue: this.signQueue,
      settings,
    });
    this.pki = new PublicPki(this, 'PublicPki', {
      ocspHandler: this.functions.ocsp,
      tsaHandler: this.functions.tsa,
      baseUrl: settings.pkiBaseUrl,
      edgeWebAclArn: settings.pkiEdgeWebAclArn,
    });
    this.functions.connectPublicPki(this.pki);
    this.auditAnchors = new AuditAnchors(this, 'AuditAnchors', {
      retentionDays: settings.audit.anchorRetentionDays,
      accessLogs: this.pki.logBucket,
    });
    this.functions.connectAuditAnchors(this.auditAnchors.bucket);
    this.api = new SigningApi(this, 'Api', {
      handler: this.functions.api,
      limits: settings.api.limits,
      clients: settings.api.clients,
    });
    if (this.functions.csc && settings.csc) {
      this.cscApi = new CscApi(this, 'CscApi', {
        handler: this.functions.csc,
        throttle: settings.csc,
        callerLimits: settings.csc.callerLimits,
        logsRole: this.api.restApi.node.tryFindChild('Account'),
      });
    }
    if (this.functions.dssext && settings.dssExt) {
      this.dssExtApi = new DssExtApi(this, 'DssExtApi', {
        handler: this.functions.dssext,
        settings: settings.dssExt,
        logsRole: this.api.restApi.node.tryFindChild('Account'),
      });
    }
    this.bindApiKeysToPrincipals(settings);
    this.observability = new Observability(this, 'Observability', {
      stage: this.api.restApi.deploymentStage,
      ...(this.cscApi ? { cscStage: this.cscApi.restApi.deploymentStage } : {}),
      ...(this.dssExtApi ? { dssExtStage: this.dssExtApi.restApi.deploymentStage } : {}),
      queue: this.signQueue.queue,
      deadLetterQueue: this.signQueue.deadLetterQueue,
      functions: {
        api: this.functions.api,
        signer: this.functions.signer,
        keygen: this.functions.keygen,
        ca: this.functions.ca,
        revoke: this.functions.revoke,
        reconcile: this.functions.reconcile,
        jwksRefresh: this.functions.jwksRefresh,
        crl: this.functions.crl,
        ocsp: this.functions.ocsp,
        tsa: this.functions.tsa,
        auditCheckpoint: this.functions.auditCheckpoint,
        ...(this.functions.csc ? { csc: this.functions.csc } : {}),
        ...(this.functions.dssext ? { dssext: this.functions.dssext } : {}),
      },
      poolTargets: settings.pool.targets,
      lowWaterPercent: settings.pool.lowWaterPercent,
      alarmEmail: settings.alarmEmail,
      hsmLogGroups: this.functions.hsmLogGroups,
    });

    this.addOutputs();
    Aspects.of(this).add(new RetainExceptOnCreate());
    this.nagAcknowledgements = addNagSuppressions(this);
  }

  /** The API refuses a request whose API key is not the calling principal's (another client's quota). */
  private bindApiKeysToPrincipals(settings: StackSettings): void {
    this.functions.api.addEnvironment(
      ENV.API_KEY_PRINCIPALS,
      this.toJsonString(
        Object.fromEntries(
          settings.api.clients.map((client) => [
            this.api.apiKeys[client].keyId,
            settings.api.principals[client] ?? '',
          ]),
        ),
      ),
    );
  }

  /** What operators and the tools need after a deploy. */
  private addOutputs(): void {
    new CfnOutput(this, 'ApiUrl', { value: this.api.restApi.url });
    new CfnOutput(this, 'PkiBaseUrl', { value: this.pki.baseUrl });
    new CfnOutput(this, 'PoolUserSecretArn', { value: this.hsm.poolUserSecret.secretArn });
    new CfnOutput(this, 'CaUserSecretArn', { value: this.hsm.caUserSecret.secretArn });
    new CfnOutput(this, 'SignQueueUrl', { value: this.signQueue.queue.queueUrl });
    new CfnOutput(this, 'DeadLetterQueueUrl', { value: this.signQueue.deadLetterQueue.queueUrl });
    new CfnOutput(this, 'AuditAnchorsBucket', { value: this.auditAnchors.bucket.bucketName });
    // The value of cscBaseUrl on the second pass, unless a custom domain serves the CSC API.
    if (this.cscApi) new CfnOutput(this, 'CscApiUrl', { value: this.cscApi.baseUrl });
    if (this.cscSecrets) {
      new CfnOutput(this, 'CscIdpClientKeySecretArn', { value: this.cscSecrets.idpClientKey.secretArn });
      new CfnOutput(this, 'CscClientsSecretArn', { value: this.cscSecrets.clients.secretArn });
    }
    // The value of dssExtBaseUrl on the second pass, unless a custom domain serves the door.
    if (this.dssExtApi) new CfnOutput(this, 'DssExtApiUrl', { value: this.dssExtApi.baseUrl });
    if (this.dssExtSecrets) {
      new CfnOutput(this, 'DssExtServiceKeySecretArn', { value: this.dssExtSecrets.serviceKey.secretArn });
      new CfnOutput(this, 'DssExtFederationMetadataSecretArn', {
        value: this.dssExtSecrets.federationMetadata.secretArn,
      });
    }
    new CfnOutput(this, 'AlarmTopicArn', { value: this.observability.topic.topicArn });
  }
}
