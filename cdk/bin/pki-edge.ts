/**
 * CDK entry point of the PKI distribution's web ACL (us-east-1), deployed once before the pipeline
 * stack: `npx cdk deploy --app "tsx cdk/bin/pki-edge.ts"` (docs/operations.md).
 */
import { createPkiEdgeApp } from '../lib/pki-edge-stack';

createPkiEdgeApp().app.synth();
