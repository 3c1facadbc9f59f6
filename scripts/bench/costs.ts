/**
 * Estimated AWS cost per million signatures from a benchmark's measured counts, beside doing the same
 * work with AWS KMS (a one-time key per signature) and AWS Private CA. List prices, us-east-1, on-demand,
 * without free tiers, as published on the pages below when this table was written (2026-11); prices
 * change: check them before deciding anything on these figures.
 *
 * Sources:
 *   Lambda       https://aws.amazon.com/lambda/pricing/
 *   DynamoDB     https://aws.amazon.com/dynamodb/pricing/on-demand/
 *   SQS          https://aws.amazon.com/sqs/pricing/
 *   API Gateway  https://aws.amazon.com/api-gateway/pricing/
 *   CloudHSM     https://aws.amazon.com/cloudhsm/pricing/
 *   KMS          https://aws.amazon.com/kms/pricing/
 *   Private CA   https://aws.amazon.com/private-ca/pricing/
 */
export const PRICES = {
  retrieved: '2026-11',
  region: 'us-east-1',
  lambdaPerGbSecond: 0.0000166667,
  lambdaPerMillionRequests: 0.2,
  /** Transactional writes cost 2 write units per item, strongly consistent reads 1 read unit per 4 KB. */
  dynamodbPerMillionWriteUnits: 0.625,
  dynamodbPerMillionReadUnits: 0.125,
  sqsPerMillionRequests: 0.4,
  apiGatewayRestPerMillion: 3.5,
  cloudHsmPerHour: 1.6,
  /** KMS: asymmetric Sign requests, and a customer managed key's monthly fee (prorated hourly). */
  kmsPerTenThousandAsymmetricRequests: 0.15,
  kmsPerKeyMonth: 1,
  /** Private CA in short-lived certificate mode: per certificate, plus the CA's monthly fee. */
  privateCaShortLivedPerCertificate: 0.058,
  privateCaShortLivedPerCaMonth: 50,
} as const;

export interface MeasuredCounts {
  /** DynamoDB item operations per signature, split into writes and reads (approximated as 1 unit each). */
  readonly tableWriteItemsPerRequest: number;
  readonly tableReadItemsPerRequest: number;
  readonly sqsCallsPerRequest: number;
  readonly lambdaInvocationsPerRequest: number;
  /** Lambda CPU (ms) per request across the functions' processes (API, signer, CA). */
  readonly lambdaCpuMsPerRequest: number;
}

/** Dollars per million signatures; HSMs at `hsms` instances running `signaturesPerSecond` on average. */
export function costPerMillion(
  m: MeasuredCounts,
  options: { memoryGb?: number; hsms?: number; signaturesPerSecond?: number } = {},
): Record<string, number> {
  const million = 1_000_000;
  const memoryGb = options.memoryGb ?? 1;
  const hsms = options.hsms ?? 2;
  const rate = options.signaturesPerSecond ?? 20;
  const lambda =
    (m.lambdaCpuMsPerRequest / 1000) * memoryGb * PRICES.lambdaPerGbSecond * million +
    m.lambdaInvocationsPerRequest * PRICES.lambdaPerMillionRequests;
  // Transactions double write units; counted as if every write were transactional (an upper bound).
  const dynamodb =
    m.tableWriteItemsPerRequest * 2 * PRICES.dynamodbPerMillionWriteUnits +
    m.tableReadItemsPerRequest * PRICES.dynamodbPerMillionReadUnits;
  const sqs = m.sqsCallsPerRequest * PRICES.sqsPerMillionRequests;
  const api = PRICES.apiGatewayRestPerMillion;
  const hsm = ((hsms * PRICES.cloudHsmPerHour) / (rate * 3600)) * million;
  const kmsAndPca =
    // One Sign request per signature, and a one-time key kept for KMS's minimum 7-day deletion window.
    (PRICES.kmsPerTenThousandAsymmetricRequests / 10_000) * million +
    PRICES.kmsPerKeyMonth * (7 / 30) * million +
    PRICES.privateCaShortLivedPerCertificate * million;
  const round = (x: number): number => Math.round(x * 100) / 100;
  return {
    lambda: round(lambda),
    dynamodb: round(dynamodb),
    sqs: round(sqs),
    apiGateway: round(api),
    cloudHsm: round(hsm),
    total: round(lambda + dynamodb + sqs + api + hsm),
    kmsPlusPrivateCa: round(kmsAndPca + api + sqs + lambda),
  };
}
