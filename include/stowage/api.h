/* api.h — what every public header of stowage shares: the marks that export its functions and
 * the guard that keeps the library's layers in order.
 *
 * Declarations between STW_BEGIN_DECLS and STW_END_DECLS are the library's interface: they keep
 * default visibility while the library itself is compiled with -fvisibility=hidden, so exactly
 * the functions of include/stowage/ are exported from libstowage.so.
 *
 * The library is built in layers (docs/architecture.md): core (src/), planner, runtime, over
 * the runtime the trainer and the profilers side by side, and over all of them the bindings. Each layer is compiled with
 * STW_BUILDING_LAYER set to its number, and each public header refuses, at compile time, a layer
 * below its own: an upward include does not compile. Programs using the library see no layer.
 */
#ifndef STW_API_H
#define STW_API_H

#include <glib.h>

#define STW_LAYER_CORE 1
#define STW_LAYER_PLANNER 2
#define STW_LAYER_RUNTIME 3
#define STW_LAYER_TRAIN 4   /* beside the profilers: neither includes the other */
#define STW_LAYER_PROFILE 5
#define STW_LAYER_BIND 6    /* the library for other languages, over all the others */
#define STW_LAYER_CLIENT 99 /* the CLI, tests, benchmarks, programs using the library */

#ifndef STW_BUILDING_LAYER
#define STW_BUILDING_LAYER STW_LAYER_CLIENT
#endif

#if defined(__GNUC__)
#define STW_BEGIN_DECLS G_BEGIN_DECLS _Pragma("GCC visibility push(default)")
#define STW_END_DECLS _Pragma("GCC visibility pop") G_END_DECLS
#else
#define STW_BEGIN_DECLS G_BEGIN_DECLS
#define STW_END_DECLS G_END_DECLS
#endif

#endif
