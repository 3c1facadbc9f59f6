export { SqsRequestQueue } from './request-queue';
