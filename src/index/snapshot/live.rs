//! Building a snapshot's live view: every segment's strings interned, the live version of every message picked,
//! the memory limit applied by leaving out the oldest sessions; and, after an append, extending the previous
//! view instead of building it again (the same rows, order and chunk numbering a fresh build gives).

use super::*;

impl Snapshot {
    /// Interns every segment's strings, picks the live version of every message and applies the memory limit by
    /// leaving out the oldest sessions. Reads the segments' fixed-width records in place.
    pub(super) fn build_live(&mut self, limit: u64) {
        let (syms, local_syms) = intern(&[], &self.segments);
        let dead: FxHashSet<u64> = self.manifest.dead.iter().copied().collect();
        // A superseded version's gid is dead. What remains with the same (session, agent, uuid) is a uuid written
        // twice into a transcript, and the first occurrence (lowest gid) is the message, as when a file is read
        // whole.
        // Rows, with duplicates of a key resolved to the lowest gid. Keys are compared by a 64-bit hash first
        // and by value on a hit, so a collision keeps both rather than hiding one. A segment never holds one key
        // twice (a read keeps the first of a uuid written twice, a merge the lowest gid), so only sessions found
        // in more than one segment can have duplicates, and only their messages are hashed.
        let total: usize = self.segments.iter().map(|s| s.rows.len()).sum();
        let mut last_segment = vec![u32::MAX; syms.len()];
        let mut spans = vec![false; syms.len()];
        for (si, seg) in self.segments.iter().enumerate() {
            let local = &local_syms[si];
            for mi in 0..seg.rows.len() {
                let Some(&g) = local.get(seg.rows.session_of(mi) as usize) else {
                    continue;
                };
                let last = &mut last_segment[g as usize];
                if *last != si as u32 {
                    spans[g as usize] |= *last != u32::MAX;
                    *last = si as u32;
                }
            }
        }
        drop(last_segment);
        let mut rows: Vec<MessageRow> = Vec::with_capacity(total);
        let mut by_key: FxHashMap<u64, u32> = FxHashMap::default();
        // Per live row, what it costs the search set (text and vectors), for the memory limit.
        let mut cost: Vec<u64> = Vec::with_capacity(total);
        let key_of = |session: u32, agent: u32, uuid: &[u8]| {
            let mut h = rustc_hash::FxHasher::default();
            (session, agent, uuid).hash(&mut h);
            h.finish()
        };
        for (si, seg) in self.segments.iter().enumerate() {
            for (row, bytes) in live_rows_of(seg, si, &local_syms[si], &dead) {
                if !spans.get(row.session as usize).copied().unwrap_or(false) {
                    rows.push(row);
                    cost.push(bytes);
                    continue;
                }
                let uuid = seg.rows.uuid_bytes(row.index as usize);
                let k = key_of(row.session, row.agent, uuid);
                match by_key.get(&k) {
                    Some(&at) => {
                        let old = rows[at as usize];
                        let old_uuid = self.segments[old.segment as usize]
                            .rows
                            .uuid_bytes(old.index as usize);
                        if (old.session, old.agent, old_uuid) == (row.session, row.agent, uuid) {
                            if row.gid < old.gid {
                                rows[at as usize] = row;
                                cost[at as usize] = bytes;
                            }
                        } else {
                            rows.push(row);
                            cost.push(bytes);
                        }
                    }
                    None => {
                        by_key.insert(k, rows.len() as u32);
                        rows.push(row);
                        cost.push(bytes);
                    }
                }
            }
        }
        drop(by_key);
        // Memory: per session, its records, texts and vectors; newest sessions are kept first.
        let mut per_session: FxHashMap<u32, (i64, u64)> = FxHashMap::default();
        for (r, bytes) in rows.iter().zip(&cost) {
            let e = per_session.entry(r.session).or_insert((i64::MIN, 0));
            e.0 = e.0.max(r.timestamp_ms.unwrap_or(i64::MIN));
            e.1 += bytes;
        }
        drop(cost);
        let mut sessions: Vec<(u32, i64, u64)> =
            per_session.iter().map(|(s, (t, b))| (*s, *t, *b)).collect();
        sessions.sort_by(|a, b| {
            b.1.cmp(&a.1)
                .then(syms[a.0 as usize].cmp(&syms[b.0 as usize]))
        });
        let mut used = 0u64;
        let mut excluded: FxHashSet<u32> = FxHashSet::default();
        for (s, _, bytes) in sessions {
            used += bytes;
            if used > limit {
                excluded.insert(s);
            }
        }
        self.excluded_sessions = excluded.len();
        self.live_bytes = used.min(limit);
        if !excluded.is_empty() {
            rows.retain(|r| !excluded.contains(&r.session));
        }
        // Group by session, then conversation, then order, so context is a contiguous neighbourhood.
        rows.sort_by_key(|r| (r.session, r.agent, r.seq, r.gid));
        let mut live_index: Vec<Vec<u32>> = self
            .segments
            .iter()
            .map(|s| vec![u32::MAX; s.rows.len()])
            .collect();
        for (i, r) in rows.iter().enumerate() {
            live_index[r.segment as usize][r.index as usize] = i as u32;
        }
        self.by_gid = GidIndex::new(&rows, self.manifest.next_gid);
        let chunks: usize = self.segments.iter().map(|s| s.rows.chunk_count()).sum();
        self.chunks.reserve(chunks);
        for (si, seg) in self.segments.iter().enumerate() {
            for ci in 0..seg.rows.chunk_count() {
                let c = seg.rows.chunk(ci);
                let message = live_index[si]
                    .get(c.message as usize)
                    .copied()
                    .unwrap_or(u32::MAX);
                if message != u32::MAX {
                    self.chunks.push(LiveChunk {
                        message,
                        kind: c.kind,
                        segment: si as u32,
                        row: c.row,
                        text_hash: c.text_hash,
                    });
                }
            }
        }
        // In message order, so that a scan walks the per-message tables (eligibility, best score) in order
        // rather than at random; a segment's chunks mostly stay together.
        self.chunks.sort_by_key(|c| c.message);
        self.messages = rows;
        self.runs = std::sync::OnceLock::new();
        self.syms = syms;
        self.local_syms = local_syms;
    }

    /// After a publish that only added segments and marked messages dead (an append), builds the live view from
    /// the previous snapshot's instead of from every record: the newly dead rows leave, the new segments' rows are
    /// merged in order, chunks are renumbered. Gives exactly what [`Snapshot::build_live`] would (tested); returns
    /// false, doing nothing, when the change is anything else (a merge, a replaced segment, the memory limit).
    pub(super) fn extend_live(&mut self, prev: &Snapshot, limit: u64) -> bool {
        let n_prev = prev.segments.len();
        if prev.excluded_sessions > 0
            || self.segments.len() < n_prev
            || !prev
                .segments
                .iter()
                .zip(&self.segments)
                .all(|(a, b)| std::sync::Arc::ptr_eq(a, b))
        {
            return false;
        }
        let dead: FxHashSet<u64> = self.manifest.dead.iter().copied().collect();
        if !prev.manifest.dead.iter().all(|g| dead.contains(g)) {
            return false;
        }
        let prev_dead: FxHashSet<u64> = prev.manifest.dead.iter().copied().collect();
        let newly_dead: FxHashSet<u64> = dead.difference(&prev_dead).copied().collect();
        let segs = self.segments.clone();
        // Symbols: the previous ones keep their numbers, new strings are appended in segment order.
        let (new_syms, added_local) = intern(&prev.syms, &segs[n_prev..]);
        let mut local_syms = prev.local_syms.clone();
        local_syms.extend(added_local);
        // The new segments' live rows; a key already live (its lowest gid) keeps the older row.
        let uuid_of = |r: &MessageRow| segs[r.segment as usize].rows.uuid_bytes(r.index as usize);
        let mut added: Vec<MessageRow> = Vec::new();
        let mut added_bytes = 0u64;
        let mut added_chunks: Vec<(u32, u32, LiveChunk)> = Vec::new();
        for (si, seg) in segs.iter().enumerate().skip(n_prev) {
            for ci in 0..seg.rows.chunk_count() {
                let c = seg.rows.chunk(ci);
                if (c.message as usize) < seg.rows.len() {
                    added_chunks.push((
                        si as u32,
                        c.message,
                        LiveChunk {
                            message: u32::MAX,
                            kind: c.kind,
                            segment: si as u32,
                            row: c.row,
                            text_hash: c.text_hash,
                        },
                    ));
                }
            }
            for (row, bytes) in live_rows_of(seg, si, &local_syms[si], &dead) {
                added_bytes += bytes;
                added.push(row);
            }
        }
        let used = prev.live_bytes + added_bytes;
        if used > limit {
            return false;
        }
        let key = |r: &MessageRow| (r.session, r.agent, r.seq, r.gid);
        added.sort_by_key(key);
        let old = &prev.messages;
        // Among the new rows, the lowest gid of an identity.
        let mut lowest: FxHashMap<(u32, u32, &[u8]), u64> = FxHashMap::default();
        for r in &added {
            let e = lowest
                .entry((r.session, r.agent, uuid_of(r)))
                .or_insert(r.gid);
            *e = (*e).min(r.gid);
        }
        // And none already live: the uuids of each conversation the new rows belong to (a contiguous range of the
        // previous view, sorted by session and conversation first), gathered once per conversation.
        let mut keep_added = Vec::with_capacity(added.len());
        let mut live_uuids: FxHashSet<&[u8]> = FxHashSet::default();
        let mut conversation = None;
        for r in &added {
            if conversation != Some((r.session, r.agent)) {
                conversation = Some((r.session, r.agent));
                let lo = old.partition_point(|o| (o.session, o.agent) < (r.session, r.agent));
                let hi = old.partition_point(|o| (o.session, o.agent) <= (r.session, r.agent));
                live_uuids = old[lo..hi]
                    .iter()
                    .filter(|o| !newly_dead.contains(&o.gid))
                    .map(uuid_of)
                    .collect();
            }
            keep_added.push(
                !live_uuids.contains(uuid_of(r))
                    && lowest.get(&(r.session, r.agent, uuid_of(r))) == Some(&r.gid),
            );
        }
        drop((lowest, live_uuids));
        // Merge the two ordered lists, numbering rows as they go.
        let mut rows: Vec<MessageRow> = Vec::with_capacity(old.len() + added.len());
        let mut remap = vec![u32::MAX; old.len()];
        let mut added_at: FxHashMap<(u32, u32), u32> = FxHashMap::default();
        let (mut i, mut j) = (0usize, 0usize);
        loop {
            while i < old.len() && newly_dead.contains(&old[i].gid) {
                i += 1;
            }
            while j < added.len() && !keep_added[j] {
                j += 1;
            }
            let take_old = match (old.get(i), added.get(j)) {
                (None, None) => break,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (Some(o), Some(a)) => key(o) < key(a),
            };
            if take_old {
                remap[i] = rows.len() as u32;
                rows.push(old[i]);
                i += 1;
            } else {
                added_at.insert((added[j].segment, added[j].index), rows.len() as u32);
                rows.push(added[j]);
                j += 1;
            }
        }
        let mut chunks: Vec<LiveChunk> = Vec::with_capacity(prev.chunks.len() + added_chunks.len());
        for c in &prev.chunks {
            let m = remap[c.message as usize];
            if m != u32::MAX {
                chunks.push(LiveChunk { message: m, ..*c });
            }
        }
        for (si, mi, mut c) in added_chunks {
            if let Some(&m) = added_at.get(&(si, mi)) {
                c.message = m;
                chunks.push(c);
            }
        }
        chunks.sort_by_key(|c| c.message);
        self.by_gid = GidIndex::new(&rows, self.manifest.next_gid);
        self.messages = rows;
        self.runs = std::sync::OnceLock::new();
        self.chunks = chunks;
        self.syms = prev.syms.iter().cloned().chain(new_syms).collect();
        self.local_syms = local_syms;
        self.excluded_sessions = 0;
        self.live_bytes = used;
        self.live_extended = true;
        true
    }
}
