//! Locks taken past a poisoning: a panic while a lock was held leaves its data as the holder
//! left it, and every lock of the host guards data that stays usable so (counters, buffers,
//! caches, tables of calls), so a later holder takes it as is rather than panicking in turn and
//! turning one failed request into a failed gateway.

use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// `mutex` locked, poisoned or not.
pub fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What `mutex` held, poisoned or not.
pub fn into_inner<T>(mutex: Mutex<T>) -> T {
    mutex.into_inner().unwrap_or_else(PoisonError::into_inner)
}

/// `lock` read, poisoned or not.
pub fn read<T: ?Sized>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

/// `lock` written, poisoned or not.
pub fn write<T: ?Sized>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use std::sync::{Mutex, RwLock};

    #[test]
    fn a_poisoned_lock_is_taken_with_its_data() {
        let mutex = Mutex::new(1);
        let rw = RwLock::new(2);
        std::thread::scope(|s| {
            let _ = s
                .spawn(|| {
                    let _m = mutex.lock();
                    let _w = rw.write();
                    panic!("poisons both");
                })
                .join();
        });
        assert!(mutex.is_poisoned() && rw.is_poisoned());
        *super::lock(&mutex) += 1;
        *super::write(&rw) += 1;
        assert_eq!((*super::lock(&mutex), *super::read(&rw)), (2, 3));
    }
}
