export * from './algorithms';
export type * from './certificate-issuer';
export type * from './sign-request';
export * from './certificate-profile';
