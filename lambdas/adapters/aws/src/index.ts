export * from './clients';
