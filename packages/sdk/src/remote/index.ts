export { ApiError, type RemoteOptions } from "./api.ts";
export { RemoteSamplingClient, RemoteServiceClient, RemoteTrainingClient } from "./clients.ts";
export { RemoteFuture, RequestFailedError } from "./future.ts";
export {
  createOpenTinkerClient,
  type OpenTinkerClient,
  type OpenTinkerClientOptions,
} from "./trpc-client.ts";
