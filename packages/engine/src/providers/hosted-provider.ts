import type { RgbaImage, WorkContext } from "../engine.ports";
import type {
  GenerativeProvider,
  GenerativeProviderName,
  GenerativeProviderOptions,
  ProviderEdit,
  ProviderEditTask,
} from "./generative-provider";
import { finishAnswer } from "./provider-images";
import {
  type AttemptHttp,
  breakerFor,
  callUpstream,
  DEFAULT_MAX_RETRIES,
  DEFAULT_TIMEOUT_MS,
  type UpstreamFailure,
  type UpstreamPolicy,
  type UpstreamTuning,
  withDefaults,
} from "./upstream-call";

/** What a hosted adapter's calls need of its options (plain data, from the configuration). */
export interface HostedCallOptions {
  apiKey?: string;
  baseUrl?: string;
  timeoutMs?: number;
  maxRetries?: number;
}

/**
 * The upstream policy of one hosted endpoint: the configured time limit and
 * retries, the breaker shared under `breakerKey` in this thread, and the key
 * redacted from every message.
 */
export function hostedPolicy(
  breakerKey: string,
  vendor: string,
  options: HostedCallOptions,
  tuning: Required<UpstreamTuning>,
  classify?: UpstreamPolicy["classify"],
): UpstreamPolicy {
  return {
    vendor,
    timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    maxRetries: options.maxRetries ?? DEFAULT_MAX_RETRIES,
    breaker: breakerFor(breakerKey, tuning),
    tuning,
    secrets: [options.apiKey],
    classify,
  };
}

/** What an adapter's `prepare` hands its `call`: built once per edit, sent on every attempt. */
export type Prepared = object;

/**
 * The part every adapter shares: the upstream policy around the vendor's
 * call, and the answer brought back to the input's size and mask. An adapter
 * says how to prepare the request (once) and how to make one attempt (the
 * answer's image bytes), and how to read its SDK's errors.
 */
export abstract class HostedProvider<P extends Prepared> implements GenerativeProvider {
  protected readonly policy: UpstreamPolicy;
  protected readonly tuning: Required<UpstreamTuning>;

  constructor(
    readonly name: GenerativeProviderName,
    readonly model: string,
    /** The vendor as people know it, for messages. */
    protected readonly vendor: string,
    protected readonly options: GenerativeProviderOptions,
    tuning: UpstreamTuning = {},
  ) {
    this.tuning = withDefaults(tuning);
    this.policy = hostedPolicy(`${name} ${options.baseUrl ?? ""}`, vendor, options, this.tuning, (error, http) =>
      this.classify(error, http),
    );
  }

  async edit(task: ProviderEditTask, context: WorkContext): Promise<ProviderEdit> {
    const prepared = await this.prepare(task);
    const { value, latencyMs } = await callUpstream(this.policy, context.signal, (http) => this.call(prepared, task, http));
    const image: RgbaImage = await finishAnswer(this.vendor, value, task);
    return { image, latencyMs };
  }

  /** Encodes the picture (and mask) the way the vendor takes them. */
  protected abstract prepare(task: ProviderEditTask): Promise<P>;

  /** One attempt: the answer's image bytes, or an UpstreamFailure / the SDK's error. */
  protected abstract call(prepared: P, task: ProviderEditTask, http: AttemptHttp): Promise<Buffer>;

  /** The adapter's reading of a failed attempt (a refusal told by an error code); undefined = the usual reading. */
  protected classify(_error: unknown, _http: AttemptHttp): UpstreamFailure | undefined {
    return undefined;
  }
}
