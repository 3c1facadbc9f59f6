import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import type * as apigw from 'aws-cdk-lib/aws-apigateway';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import type { KeyType } from '@pipeline/core/shared';
import { SCHEDULES } from '@pipeline/resources';
import { METRICS_NAMESPACE, METRICS_SERVICE } from '../functions/spec';

/** Requests should start within this many seconds of being queued (the 3 s peak-hour response target). */
export const QUEUE_AGE_ALARM_SECONDS = 3;

const MINUTE = Duration.minutes(1);

/** What a failed login or a cluster out of reach logs (lambdas/core/src/shared/hsm.ts, the CKR names). */
export const HSM_LOGIN_FAILURE_TERMS = [
  'HsmLoginError',
  'HsmTokenNotFoundError',
  'CKR_PIN_INCORRECT',
  'CKR_PIN_LOCKED',
  'CKR_TOKEN_NOT_PRESENT',
];
/** The pool gauges are emitted by keygen after each fill, so their period is the schedule's. */
const FILL_PERIOD = Duration.minutes(SCHEDULES.keygen.rateMinutes);

export interface ObservabilityProps {
  readonly stage: apigw.Stage;
  /** The CSC API's stage, where it is deployed. */
  readonly cscStage?: apigw.Stage;
  /** The DSS-Ext door's stage, where it is deployed. */
  readonly dssExtStage?: apigw.Stage;
  readonly queue: sqs.IQueue;
  readonly deadLetterQueue: sqs.IQueue;
  readonly functions: {
    api: lambda.IFunction;
    signer: lambda.IFunction;
    keygen: lambda.IFunction;
    ca: lambda.IFunction;
    revoke: lambda.IFunction;
    reconcile: lambda.IFunction;
    jwksRefresh: lambda.IFunction;
    crl: lambda.IFunction;
    ocsp: lambda.IFunction;
    tsa: lambda.IFunction;
    auditCheckpoint: lambda.IFunction;
    /** Where the CSC API is deployed. */
    csc?: lambda.IFunction;
    /** Where the DSS-Ext door is deployed. */
    dssext?: lambda.IFunction;
  };
  readonly poolTargets: Partial<Record<KeyType, number>>;
  readonly lowWaterPercent: number;
  readonly alarmEmail?: string;
  /** The log groups of the functions that log in to the HSMs: their login failures are counted. */
  readonly hsmLogGroups: readonly logs.ILogGroup[];
}

/** A pool metric as the Powertools adapter emits it: namespace SigningPipeline, dimensions service + KeyType. */
export function poolMetric(
  name: string,
  keyType: KeyType,
  statistic: string,
  period: Duration,
): cloudwatch.Metric {
  return new cloudwatch.Metric({
    namespace: METRICS_NAMESPACE,
    metricName: name,
    dimensionsMap: { service: METRICS_SERVICE, KeyType: keyType },
    statistic,
    period,
  });
}

/** A count the functions emit without a key type (namespace SigningPipeline, dimension service), summed. */
function serviceMetric(name: string, period: Duration): cloudwatch.Metric {
  return new cloudwatch.Metric({
    namespace: METRICS_NAMESPACE,
    metricName: name,
    dimensionsMap: { service: METRICS_SERVICE },
    statistic: 'Sum',
    period,
  });
}

/**
 * The dashboard an operator watches and the alarms that page: pool depth against target per key type,
 * throughput and latency, queue age, dead letters and errors. Alarms go to one encrypted SNS topic.
 */
export class Observability extends Construct {
  public readonly topic: sns.Topic;
  public readonly dashboard: cloudwatch.Dashboard;
  public readonly alarms: cloudwatch.Alarm[] = [];

  public constructor(scope: Construct, id: string, props: ObservabilityProps) {
    super(scope, id);
    this.topic = this.createTopic(props.alarmEmail);
    const keyTypes = (Object.entries(props.poolTargets) as [KeyType, number][]).filter(([, t]) => t > 0);
    this.createAlarms(props, keyTypes);
    this.dashboard = this.createDashboard(props, keyTypes);
  }

  /** The encrypted topic alarms go to, with the operators' e-mail subscribed if one is given. */
  private createTopic(alarmEmail: string | undefined): sns.Topic {
    const key = new kms.Key(this, 'TopicKey', {
      description: 'Signing pipeline alarm topic',
      enableKeyRotation: true,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    // CloudWatch publishes alarm notifications to the encrypted topic, so it must use the key.
    key.addToResourcePolicy(
      new iam.PolicyStatement({
        principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['kms:Decrypt', 'kms:GenerateDataKey*'],
        resources: ['*'],
      }),
    );
    const topic = new sns.Topic(this, 'AlarmTopic', { masterKey: key, enforceSSL: true });
    if (alarmEmail) topic.addSubscription(new subscriptions.EmailSubscription(alarmEmail));
    return topic;
  }

  /** Pool below its low-water mark, dead letters, queue age, function errors, and the integrity counters. */
  private createAlarms(props: ObservabilityProps, keyTypes: [KeyType, number][]): void {
    for (const [keyType, target] of keyTypes) {
      const lowWater = Math.ceil((target * props.lowWaterPercent) / 100);
      this.alarm(`PoolLow-${keyType}`, {
        alarmDescription: `Key pool ${keyType} below its low-water mark (${lowWater} of target ${target}) after a fill, or keygen not reporting`,
        metric: poolMetric('KeysAvailable', keyType, 'Minimum', FILL_PERIOD),
        threshold: lowWater,
        comparisonOperator: cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
        evaluationPeriods: 2,
        datapointsToAlarm: 2,
        // No gauge for two fill periods means keygen is not running: as bad as an empty pool.
        treatMissingData: cloudwatch.TreatMissingData.BREACHING,
      });
    }
    this.alarm('DeadLetters', {
      alarmDescription: 'Sign requests in the dead-letter queue: inspect, then npm run redrive',
      metric: props.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
        statistic: 'Maximum',
        period: Duration.minutes(1),
      }),
      threshold: 0,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    this.alarm('QueueAge', {
      alarmDescription: `Oldest queued sign request older than ${QUEUE_AGE_ALARM_SECONDS} s: signers are not keeping up`,
      metric: props.queue.metricApproximateAgeOfOldestMessage({
        statistic: 'Maximum',
        period: Duration.minutes(1),
      }),
      threshold: QUEUE_AGE_ALARM_SECONDS,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 3,
      datapointsToAlarm: 2,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    for (const [name, fn] of [
      // The sign request API: every e-service's requests.
      ['Api', props.functions.api],
      // No time-stamps: B-T and B-LT signatures fail.
      ['Tsa', props.functions.tsa],
      ['Signer', props.functions.signer],
      ['Keygen', props.functions.keygen],
      ['Ca', props.functions.ca],
      ['Revoke', props.functions.revoke],
      ['Reconcile', props.functions.reconcile],
      // The identity providers' keys were not refreshed: rotated keys will not verify until they are.
      ['JwksRefresh', props.functions.jwksRefresh],
      // No fresh CRL: relying parties see the old one until its nextUpdate, then revocation checks fail.
      ['Crl', props.functions.crl],
      ['Ocsp', props.functions.ocsp],
      // Checkpoints not signed or not anchored: the log's newest entries are covered by chain links only.
      ['AuditCheckpoint', props.functions.auditCheckpoint],
      // The CSC API answers its own refusals: an error is its wiring failing (a secret not put, not a JWK).
      ...(props.functions.csc ? [['Csc', props.functions.csc] as const] : []),
      // The door answers its own refusals: an error is its wiring failing (the service key not put).
      ...(props.functions.dssext ? [['Dssext', props.functions.dssext] as const] : []),
    ] as const) {
      this.alarmOnAny(
        `${name}Errors`,
        `${name} function errors (failed invocations, not per-record failures)`,
        fn.metricErrors({ statistic: 'Sum', period: Duration.minutes(5) }),
      );
    }
    this.alarmOnAny(
      'Api5xx',
      'API Gateway answered 5XX (integration failures and timeouts, function errors): read the API function log and the access log',
      props.stage.metricServerError({ statistic: 'Sum', period: Duration.minutes(5) }),
    );
    if (props.cscStage) {
      this.alarmOnAny(
        'CscApi5xx',
        'The CSC API answered 5XX (integration failures and timeouts, function errors): read the csc function log and the CSC API access log',
        props.cscStage.metricServerError({ statistic: 'Sum', period: Duration.minutes(5) }),
      );
    }
    if (props.dssExtStage) {
      this.alarmOnAny(
        'DssExtApi5xx',
        'The DSS-Ext door answered 5XX (integration failures and timeouts, function errors): read the dssext function log and the DSS-Ext API access log',
        props.dssExtStage.metricServerError({ statistic: 'Sum', period: Duration.minutes(5) }),
      );
    }
    this.alarmOnAny(
      'LambdaThrottles',
      "Lambda throttled invocations in this account and region: a function at its reserved concurrency or the account's quota (lambdaConcurrencyQuota)",
      lambda.Function.metricAllThrottles({ statistic: 'Sum', period: Duration.minutes(5) }),
    );
    this.alarmOnAny(
      'HsmLoginFailures',
      'HSM logins failed or no HSM token was reachable: check the cluster (HSMs active), the security group rule and the crypto user secrets',
      this.hsmLoginFailures(props.hsmLogGroups),
    );
    this.alarmOnAny(
      'RequestsLost',
      'Sign requests failed DELIVERY_LOST: open with no message even after requeues (queue or signer fault)',
      serviceMetric('RequestsLost', Duration.minutes(SCHEDULES.reconcile.rateMinutes)),
    );
    this.alarmOnAny(
      'RevocationsRestored',
      'The CRL publication found revocations of the published CRL that the certificate records no longer show (an edited or restored table): kept in the CRL; compare `npm run audit -- verify`',
      serviceMetric('RevocationsRestored', Duration.minutes(5)),
    );
    this.alarmOnAny(
      'AuditHeadsRewound',
      'The audit checkpointer found chain heads that moved backwards from its last checkpoint (a rewritten audit table) and signed nothing: run `npm run audit -- verify`',
      serviceMetric('AuditHeadsRewound', Duration.minutes(SCHEDULES.auditCheckpoint.rateMinutes)),
    );
  }

  /**
   * Counts the log lines of a failed HSM login or an unreachable token (the error names and PKCS#11 codes
   * the functions log: `errorName`, the runtime's `errorType`, `errorCode`) in the HSM functions' logs.
   */
  private hsmLoginFailures(logGroups: readonly logs.ILogGroup[]): cloudwatch.IMetric {
    const metricName = 'HsmLoginFailures';
    logGroups.forEach(
      (logGroup, i) =>
        new logs.MetricFilter(this, `HsmLoginFailures${i}`, {
          logGroup,
          metricNamespace: METRICS_NAMESPACE,
          metricName,
          metricValue: '1',
          filterPattern: logs.FilterPattern.anyTerm(...HSM_LOGIN_FAILURE_TERMS),
        }),
    );
    return new cloudwatch.Metric({
      namespace: METRICS_NAMESPACE,
      metricName,
      statistic: 'Sum',
      period: Duration.minutes(5),
    });
  }

  private alarm(id: string, props: cloudwatch.AlarmProps): void {
    const alarm = new cloudwatch.Alarm(this, id, props);
    alarm.addAlarmAction(new actions.SnsAction(this.topic));
    this.alarms.push(alarm);
  }

  /** An alarm on any occurrence of what `metric` counts (a sum of at least 1 in one period); none is fine. */
  private alarmOnAny(id: string, alarmDescription: string, metric: cloudwatch.IMetric): void {
    this.alarm(id, {
      alarmDescription,
      metric,
      threshold: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
  }

  private createDashboard(props: ObservabilityProps, keyTypes: [KeyType, number][]): cloudwatch.Dashboard {
    const dashboard = new cloudwatch.Dashboard(this, 'Dashboard', { defaultInterval: Duration.hours(24) });
    dashboard.addWidgets(...trafficWidgets(props));
    dashboard.addWidgets(...poolTargetWidgets(props, keyTypes));
    dashboard.addWidgets(...poolFlowWidgets(props, keyTypes));
    dashboard.addWidgets(
      ...errorWidgets(props),
      new cloudwatch.AlarmStatusWidget({ title: 'Alarms', alarms: this.alarms }),
    );
    return dashboard;
  }
}

/** Requests, API latency, signer duration. */
function trafficWidgets({ stage, functions }: ObservabilityProps): cloudwatch.IWidget[] {
  return [
    new cloudwatch.GraphWidget({
      title: 'Requests per minute',
      left: [stage.metricCount({ statistic: 'Sum', period: MINUTE, label: 'requests' })],
      right: [
        stage.metricClientError({ statistic: 'Sum', period: MINUTE, label: '4xx' }),
        stage.metricServerError({ statistic: 'Sum', period: MINUTE, label: '5xx' }),
      ],
    }),
    new cloudwatch.GraphWidget({
      title: 'API latency (ms)',
      left: ['p50', 'p99'].map((p) => stage.metricLatency({ statistic: p, period: MINUTE, label: p })),
    }),
    new cloudwatch.GraphWidget({
      title: 'Signer duration (ms)',
      left: ['p50', 'p99'].map((p) =>
        functions.signer.metricDuration({ statistic: p, period: MINUTE, label: p }),
      ),
    }),
  ];
}

/** Each key type's pool against its target and low-water mark. */
function poolTargetWidgets(props: ObservabilityProps, keyTypes: [KeyType, number][]): cloudwatch.IWidget[] {
  return keyTypes.map(
    ([keyType, target]) =>
      new cloudwatch.GraphWidget({
        title: `Pool ${keyType}: available vs target`,
        left: [poolMetric('KeysAvailable', keyType, 'Minimum', FILL_PERIOD)],
        leftAnnotations: [
          { value: target, label: 'target' },
          {
            value: Math.ceil((target * props.lowWaterPercent) / 100),
            label: 'low water',
            color: cloudwatch.Color.RED,
          },
        ],
        width: 6,
      }),
  );
}

/** Keys in and out of the pool, the empty pool's fallbacks and rejections, the queue. */
function poolFlowWidgets(props: ObservabilityProps, keyTypes: [KeyType, number][]): cloudwatch.IWidget[] {
  return [
    new cloudwatch.GraphWidget({
      title: 'Keys generated / claimed per 15 min',
      left: keyTypes.map(([k]) =>
        poolMetric('KeysAdded', k, 'Sum', FILL_PERIOD).with({ label: `added ${k}` }),
      ),
      right: keyTypes.map(([k]) =>
        poolMetric('KeysClaimed', k, 'Sum', FILL_PERIOD).with({ label: `claimed ${k}` }),
      ),
    }),
    new cloudwatch.GraphWidget({
      title: 'Empty pool: on-the-fly fallbacks and rejections',
      left: keyTypes.flatMap(([k]) => [
        poolMetric('OnTheFlyFallbacks', k, 'Sum', MINUTE).with({ label: `fallback ${k}` }),
        poolMetric('PoolEmptyRejections', k, 'Sum', MINUTE).with({ label: `rejected ${k}` }),
      ]),
    }),
    new cloudwatch.GraphWidget({
      title: 'Queue age (s) and dead letters',
      left: [props.queue.metricApproximateAgeOfOldestMessage({ statistic: 'Maximum', period: MINUTE })],
      leftAnnotations: [{ value: QUEUE_AGE_ALARM_SECONDS, label: 'alarm', color: cloudwatch.Color.RED }],
      right: [
        props.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
          statistic: 'Maximum',
          period: MINUTE,
        }),
      ],
    }),
  ];
}

/** Every function's errors, the signer's throttles. */
function errorWidgets({ functions }: ObservabilityProps): cloudwatch.IWidget[] {
  return [
    new cloudwatch.GraphWidget({
      title: 'Function errors',
      left: Object.entries(functions).map(([name, fn]) =>
        fn.metricErrors({ statistic: 'Sum', period: MINUTE, label: name }),
      ),
      right: [
        functions.signer.metricThrottles({ statistic: 'Sum', period: MINUTE, label: 'signer throttles' }),
      ],
    }),
  ];
}
