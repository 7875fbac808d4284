//! Storage layout: which shard a job lives in, and the names of its keys.
//!
//! Every key of shard `s` in namespace `ns` starts with the hash tag
//! `{tw:<ns>:<s>}`, so all keys one script touches hash to the same Redis
//! Cluster slot:
//!
//! | Key | Type | Contents |
//! |---|---|---|
//! | `{tw:ns:s}:idx` | zset | slice number → earliest run time (ms) in that slice |
//! | `{tw:ns:s}:s:<n>` | zset | time slice `n = run_ms / slice_ms`: job id → run time (ms) |
//! | `{tw:ns:s}:m` | hash | job id → record (`st\|fen\|att\|due\|per\|run\|sl\|lu\|can\|err\|fp\|fc\|sch\|kind`, see [`scripts`](crate::scripts)) |
//! | `{tw:ns:s}:d` | hash | job id → payload (JSON) |
//! | `{tw:ns:s}:l` | zset | leases: job id → lease expiry (ms) |
//! | `{tw:ns:s}:dead` | zset | dead letters: job id → time of death (ms) |
//! | `{tw:ns:s}:e` | hash | job id → the last error of a failed attempt |
//! | `{tw:ns:s}:x:<b>:<j>` | set | tombstones finished in time bucket `b`: [`fingerprint`]s whose high bits select `j` (linear hashing); expires whole |
//! | `{tw:ns:s}:xm` | hash | per tombstone bucket `b`: `n:<b>` sets per level, `s:<b>` sets split, `c:<b>` count |
//! | `{tw:ns:s}:o:<w>` | hash | outcomes of window `w`: `<id>\|<fence>` (a lease's end, but a one-shot ack) or `<id>\|c<token>` (a cancel) → outcome; expires whole |
//! | `{tw:ns:s}:ol:<b>` | hash | leases that lapsed in tombstone bucket `b`: `<id>\|<fence>`; expires with the bucket's tombstones |
//!
//! and one key per namespace, `{tw:ns:layout}`: the recorded layout (shard
//! count, slice, tombstone retention, outcome window, format version).
//!
//! and one Pub/Sub channel, `{tw:ns:s}:wake`, on which the scripts announce
//! the shard's new earliest run time whenever it moves earlier (a wake-up
//! hint for sleeping workers; see the worker).
//!
//! Slices only partition storage (no key grows with the whole schedule);
//! correctness comes from the scores, which are compared with Redis `TIME`.

/// Computes the shard of a job id: FNV-1a (64 bit) of its bytes, modulo the
/// shard count. The function is stable across processes, platforms and
/// versions, because every producer and worker must agree on it.
///
/// # Examples
///
/// ```
/// use schedulers_redis::shard_of;
///
/// let s = shard_of("invoice-17", 8);
/// assert!(s < 8);
/// assert_eq!(s, shard_of("invoice-17", 8));
/// assert_eq!(shard_of("anything", 1), 0);
/// ```
pub fn shard_of(id: &str, shards: u32) -> u32 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in id.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    (h % u64::from(shards.max(1))) as u32
}

/// The fingerprint of a job id kept in its tombstone: 62 bits of a hash
/// independent of [`shard_of`]'s (FNV-1a, then the SplitMix64 finaliser), so
/// that the ids of one shard spread over all of its values. Two ids of one
/// shard share it with probability 2⁻⁶², so among `n` tombstones of a shard
/// a new id is refused by mistake with probability about `n / 2⁶²`. Never
/// 0 (the tombstone sets' sentinel).
///
/// # Examples
///
/// ```
/// use schedulers_redis::keys::fingerprint;
///
/// assert!(fingerprint("invoice-17") < 1 << 62);
/// assert_ne!(fingerprint("invoice-17"), fingerprint("invoice-18"));
/// ```
pub fn fingerprint(id: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in id.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    let mut z = h.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    ((z ^ (z >> 31)) >> 2).max(1)
}

/// The keys of one shard.
#[derive(Debug, Clone)]
pub(crate) struct ShardKeys {
    /// `{tw:ns:s}`: the hash-tagged prefix every key of the shard starts
    /// with; also the routing key of the shard's commands.
    pub(crate) prefix: std::sync::Arc<str>,
    pub(crate) idx: String,
    pub(crate) meta: String,
    pub(crate) data: String,
    pub(crate) lease: String,
    pub(crate) dead: String,
    pub(crate) errors: String,
    pub(crate) tomb_meta: String,
    /// The wake-up channel (not a key).
    pub(crate) wake: String,
}

impl ShardKeys {
    pub(crate) fn new(namespace: &str, shard: u32) -> ShardKeys {
        let prefix = format!("{{tw:{namespace}:{shard}}}");
        ShardKeys {
            idx: format!("{prefix}:idx"),
            meta: format!("{prefix}:m"),
            data: format!("{prefix}:d"),
            lease: format!("{prefix}:l"),
            dead: format!("{prefix}:dead"),
            errors: format!("{prefix}:e"),
            tomb_meta: format!("{prefix}:xm"),
            wake: format!("{prefix}:wake"),
            prefix: prefix.into(),
        }
    }

    /// The seven fixed keys, in the order every script expects them as
    /// `KEYS[1..7]`.
    pub(crate) fn fixed(&self) -> [&str; 7] {
        [
            &self.idx,
            &self.meta,
            &self.data,
            &self.lease,
            &self.dead,
            &self.errors,
            &self.tomb_meta,
        ]
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn keys_share_one_hash_tag() {
        let k = ShardKeys::new("ns", 3);
        for key in k.fixed() {
            assert!(key.starts_with("{tw:ns:3}:"), "{key}");
        }
        assert_eq!(k.wake, "{tw:ns:3}:wake");
    }

    #[test]
    fn shards_spread_and_are_stable() {
        // Known FNV-1a 64 value of "a" is 0xaf63dc4c8601ec8c.
        assert_eq!(
            shard_of("a", u32::MAX),
            (0xaf63_dc4c_8601_ec8c_u64 % u64::from(u32::MAX)) as u32
        );
        let mut counts = [0u32; 4];
        for i in 0..4000 {
            counts[shard_of(&format!("job-{i}"), 4) as usize] += 1;
        }
        assert!(counts.iter().all(|&c| c > 800), "{counts:?}");
    }
}
