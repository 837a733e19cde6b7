//! How a plugin's errors cross into the component: an export returning `result<_, E>` fails by
//! throwing, and the bindings take the thrown value's `payload` as the `E`.

/** An error whose `payload` is the WIT error value. */
export function witError(payload) {
  const err = new Error(typeof payload === 'string' ? payload : payload.message);
  err.payload = payload;
  return err;
}

/** The WIT `config-error` for a `ConfigError`. */
export function configErrorPayload(err) {
  return { key: err.key ?? undefined, message: err.message };
}
