// The kernels' worker threads (see parallel.hpp).
#include "parallel.hpp"

#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <system_error>
#include <thread>

namespace dpcore {

namespace {

// kernel_threads() - 1 workers that sleep until a job comes: waking one costs ~20 µs here,
// starting a thread 50-100 µs, as much as a small clique's sweep. One caller at a time; a
// caller that finds the pool busy (another thread's kernel) runs its slices itself.
class Pool {
 public:
  // Starts up to `workers` threads; fewer if the system refuses one (the jobs then need
  // fewer parts, or run on the caller).
  explicit Pool(unsigned workers) {
    try {
      for (unsigned id = 1; id <= workers; ++id) {
        std::thread([this, id] { serve(id); }).detach();
        workers_ = id;
      }
    } catch (const std::system_error&) {
    }
  }

  bool run(unsigned parts, void (*call)(void*, unsigned), void* context) {
    if (parts - 1 > workers_) return false;
    std::unique_lock<std::mutex> caller(busy_, std::try_to_lock);
    if (!caller.owns_lock()) return false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      call_ = call;
      context_ = context;
      parts_ = parts;
      pending_ = parts - 1;
      ++generation_;
    }
    wake_.notify_all();
    call(context, 0);
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [&] { return pending_ == 0; });
    return true;
  }

 private:
  void serve(unsigned id) {
    std::uint64_t seen = 0;
    for (;;) {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return generation_ != seen; });
      seen = generation_;
      if (id >= parts_) continue;
      auto* call = call_;
      void* context = context_;
      lock.unlock();
      call(context, id);
      lock.lock();
      if (--pending_ == 0) done_.notify_one();
    }
  }

  unsigned workers_ = 0;
  std::mutex busy_;  // held by the caller whose job the pool runs
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::uint64_t generation_ = 0;
  void (*call_)(void*, unsigned) = nullptr;
  void* context_ = nullptr;
  unsigned parts_ = 0;
  unsigned pending_ = 0;
};

// The pool is never destroyed (its workers sleep through exit). A forked child has none of
// its threads, so the child drops it (leaking its memory) and builds its own on first use.
std::atomic<Pool*> the_pool{nullptr};
std::mutex* creating = new std::mutex;  // replaced in a child: a thread may hold it at fork

Pool& pool() {
  static const int registered = pthread_atfork(nullptr, nullptr, [] {
    the_pool.store(nullptr);
    creating = new std::mutex;
  });
  (void)registered;
  Pool* p = the_pool.load();
  if (p != nullptr) return *p;
  std::lock_guard<std::mutex> lock(*creating);
  if (the_pool.load() == nullptr) the_pool.store(new Pool(kernel_threads() - 1));
  return *the_pool.load();
}

}  // namespace

void run_parts(unsigned parts, void (*call)(void*, unsigned), void* context) {
  if (parts > 1 && parts <= kernel_threads() && pool().run(parts, call, context)) return;
  for (unsigned p = 0; p < parts; ++p) call(context, p);
}

}  // namespace dpcore
