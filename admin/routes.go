package admin

import "github.com/agentbreaker/agentbreaker/modelfailover"

// FailoverRoutes shows a model failover's routes on the admin page: their order, which
// one is primary and which one serves calls now. Pass it as Config.Routes.
func FailoverRoutes(f *modelfailover.Failover) Routes { return failoverRoutes{f} }

type failoverRoutes struct{ f *modelfailover.Failover }

func (r failoverRoutes) RouteStatus() []RouteStatus {
	serving := r.f.Stats().Serving
	routes := r.f.Routes()
	out := make([]RouteStatus, len(routes))
	for i, ri := range routes {
		out[i] = RouteStatus{
			Model:   ri.Model,
			Region:  ri.Region,
			Primary: ri.Primary,
			Serving: ri.Name == serving.Name && ri.Model == serving.Model && ri.Region == serving.Region,
		}
	}
	return out
}
