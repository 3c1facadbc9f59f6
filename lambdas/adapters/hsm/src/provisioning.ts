/**
 * The HSM adapter's second entry point (@pipeline/adapters/hsm/provisioning): provisioning the pool
 * wrapping key, for the local bootstrap and operators only. It is not in the adapter's index, so no
 * Lambda bundle holds it or koffi, the FFI it needs.
 */
export { provisionWrappingKey } from './wrapping-key';
