export { ForecastInputError } from './errors';
export { forecast } from './forecast';
export { weeklyProfile } from './profile';
export { type DemandHistory, type Forecast, HOUR_MS, type KnownEvent, WEEK_BUCKETS } from './types';
