/**
 * CDK entry point (cdk.json runs it with tsx). Offline by design: every deployment value comes from
 * context (see docs/operations.md); nothing is looked up in AWS while synthesizing.
 */
import { createApp } from '../lib/app';

createApp().app.synth();
